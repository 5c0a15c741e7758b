// Compiled with -mavx2 only (no -mfma): the multiply and the add stay two roundings, as in the
// portable version.
#include <immintrin.h>

#include "npu/kernels/tile_product.h"

namespace tandem::npu::kernels {

void tile_product_avx2(const float* a, const float* b, float* out, int T) {
  for (int i = 0; i < T; ++i) {
    float* orow = out + i * T;
    for (int j0 = 0; j0 < T; j0 += 32) {
      // Up to 4 accumulators of 8 columns stay in registers over the whole k loop.
      const int width = T - j0 < 32 ? T - j0 : 32;
      __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
      for (int k = 0; k < T; ++k) {
        const __m256 av = _mm256_set1_ps(a[i * T + k]);
        const float* brow = b + k * T + j0;
        for (int v = 0; v < width / 8; ++v) acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(av, _mm256_loadu_ps(brow + 8 * v)));
      }
      for (int v = 0; v < width / 8; ++v) _mm256_storeu_ps(orow + j0 + 8 * v, acc[v]);
    }
  }
}

}  // namespace tandem::npu::kernels
