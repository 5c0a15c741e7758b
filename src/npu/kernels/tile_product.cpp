#include "npu/kernels/tile_product.h"

#include <algorithm>

#include "core/cpu_features.h"

namespace tandem::npu::kernels {

void tile_product_portable(const float* a, const float* b, float* out, int T) {
  std::fill(out, out + T * T, 0.0f);
  for (int i = 0; i < T; ++i) {
    float* orow = out + i * T;
    for (int k = 0; k < T; ++k) {
      const float av = a[i * T + k];
      const float* brow = b + k * T;
      for (int j = 0; j < T; ++j) orow[j] += av * brow[j];
    }
  }
}

#if defined(TANDEM_NPU_PORTABLE_KERNELS)
bool tile_product_avx2_available() { return false; }
void tile_product_avx2(const float* a, const float* b, float* out, int T) { tile_product_portable(a, b, out, T); }
#else
bool tile_product_avx2_available() { return cpu_features().avx2; }
#endif

void tile_product(const float* a, const float* b, float* out, int T) {
  static const bool avx2 = tile_product_avx2_available();
  if (avx2 && T % 8 == 0) {
    tile_product_avx2(a, b, out, T);
  } else {
    tile_product_portable(a, b, out, T);
  }
}

}  // namespace tandem::npu::kernels
