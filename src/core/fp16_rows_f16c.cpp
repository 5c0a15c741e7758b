// Compiled with -mavx2 -mf16c (no -mfma). Tails go through the portable loop.
#include <immintrin.h>

#include "core/fp16_rows.h"

namespace tandem {

void widen_fp16_row_simd(const uint8_t* src, float* dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  widen_fp16_row_portable(src + 2 * i, dst + i, n - i);
}

void narrow_fp16_row_simd(const float* src, uint8_t* dst, int n, bool accumulate) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    if (accumulate) {
      v = _mm256_add_ps(v, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dst + 2 * i))));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  narrow_fp16_row_portable(src + i, dst + 2 * i, n - i, accumulate);
}

}  // namespace tandem
