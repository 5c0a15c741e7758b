// Block decoders for the AVX-512 kernels. Include only from files compiled with the AVX-512 flags;
// everything is in an anonymous namespace so no copy can be merged into a baseline file.
#pragma once

// GCC 12.2's AVX-512 headers initialize their "undefined" vectors from themselves, which its own
// -Wuninitialized flags wherever an intrinsic is inlined (GCC bug 105593, fixed in 12.3). The
// warning is about the header, not this code; silence just these two in AVX-512 files.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdint>

#include "core/quant.h"

namespace tandem::cpu::detail {
namespace {

inline float fp16_scale(uint16_t h) { return _cvtsh_ss(h); }

// Q4_0: the 16 bytes widen to 16 dwords; vpermps looks up the low 4 bits of each dword in a table
// of the levels -8..7, so the low nibbles need no mask and the high nibbles one shift. The
// result is the exact level (q - 8) as fp32; the caller applies the block scale.
inline void q4_levels(const BlockQ4_0* b, __m512& lo, __m512& hi) {
  const __m512 levels = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs)));
  lo = _mm512_permutexvar_ps(v, levels);
  hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), levels);
}

inline void q8_levels(const BlockQ8_0* b, __m512& lo, __m512& hi) {
  lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs))));
  hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16))));
}

// 16 plain elements (masked: lanes outside `mask` read nothing and are zero).
inline __m512 load_f32(const float* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }
inline __m512 load_f16(const uint16_t* p, __mmask16 mask) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
}
inline __m512 load_bf16(const uint16_t* p, __mmask16 mask) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p)), 16));
}
inline __m512 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline __m512 load_bf16(const uint16_t* p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}

// Lanes [0, n) of a 16-lane mask (n clamped to [0, 16]).
inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

}  // namespace
}  // namespace tandem::cpu::detail
