// Block decoders for the AVX2 + FMA + F16C kernels. Include only from files compiled with those
// flags; everything is in an anonymous namespace so no copy can be merged into a baseline file.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/quant.h"

namespace tandem::cpu::detail {
namespace {

inline float fp16_scale(uint16_t h) { return _cvtsh_ss(h); }
inline float bf16_value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// 32 levels of a Q4_0 block as four ymm (columns 0-7, 8-15, 16-23, 24-31), exact (q - 8).
inline void q4_levels(const BlockQ4_0* b, __m256 v[4]) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
  const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
  const __m128i lo = _mm_sub_epi8(_mm_and_si128(bytes, low4), eight);
  const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), low4), eight);
  v[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
  v[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
  v[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
  v[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
}

inline void q8_levels(const BlockQ8_0* b, __m256 v[4]) {
  for (int j = 0; j < 4; ++j)
    v[j] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + 8 * j))));
}

inline __m256 load8_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load8_bf16(const uint16_t* p) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

// Lane mask for the first n (clamped to [0, 8]) lanes, for maskload / maskstore.
inline __m256i first_lanes8(int64_t n) {
  const int c = n < 0 ? 0 : n > 8 ? 8 : int(n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace
}  // namespace tandem::cpu::detail
