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

// For the GEMM micro-kernels: stores (or adds) an accumulator pair to y's row, its 32 columns
// masked (m0, m1) so nothing past the valid region is read or written.
inline void store_row(float* y, __m512 c0, __m512 c1, __mmask16 m0, __mmask16 m1, bool accumulate) {
  if (accumulate) {
    c0 = _mm512_add_ps(c0, _mm512_maskz_loadu_ps(m0, y));
    c1 = _mm512_add_ps(c1, _mm512_maskz_loadu_ps(m1, y + 16));
  }
  _mm512_mask_storeu_ps(y, m0, c0);
  _mm512_mask_storeu_ps(y + 16, m1, c1);
}

// In-register transpose of a 16x16 block of 32-bit values (unpack pairs, unpack quads, then two
// rounds of 128-bit lane shuffles).
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
    r[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // r[4g + j] lane L now holds column 4L + j of rows 4g..4g+3.
  for (int j = 0; j < 4; ++j) {
    const __m512 u0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    const __m512 u1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
    const __m512 u2 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    const __m512 u3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    t[j] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    t[8 + j] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    t[12 + j] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// A GEMM microkernel's output tile (MV rows of 32 floats), fetched while the tile computes: with k
// blocks outermost (run_gemm) the rows of y were last touched a whole panel sweep ago, megabytes
// of y later, so without this the final loads and stores wait on L3 or memory at the end of
// every call.
template <int MV>
inline void prefetch_tile(const float* y, int64_t ldy) {
  for (int i = 0; i < MV; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy + 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy + 31), _MM_HINT_T0);
  }
}

}  // namespace
}  // namespace tandem::cpu::detail
