// The functional model's one hot loop: a T x T tile product in fp32, as the NPU's matrix array
// accumulates it. Every version computes out[i][j] = sum over k ascending of a[i][k] * b[k][j],
// each product rounded, then added (never fused), so all hosts give the same bits.
#pragma once

namespace tandem::npu::kernels {

// out = a . b for T x T row-major tiles; T must be a multiple of 8 for the vector versions.
void tile_product(const float* a, const float* b, float* out, int T);

// The portable and AVX2 versions, for tests that compare them.
void tile_product_portable(const float* a, const float* b, float* out, int T);
bool tile_product_avx2_available();
void tile_product_avx2(const float* a, const float* b, float* out, int T);

}  // namespace tandem::npu::kernels
