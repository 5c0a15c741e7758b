// Building blocks of the AVX-512 VNNI decode kernels on packed weights (packed_weight.h), shared
// by the files that hold the kernels of each family of types. Included only from files compiled
// with -mavx512f -mavx512bw -mavx512vnni.
//
// Every kernel turns one 32-column block of its 16-row group into eight zmm of unsigned bytes,
// v[j] holding dword j of each row's block (elements 4j..4j+3 for j < 4, 16+4(j-4).. for j >= 4),
// then takes their dot products with the int8 activations with vpdpbusd (u8 x s8, four products
// per dword lane) and scales the block's 16 integer sums in fp32.
#pragma once

#include <immintrin.h>

#include "core/quant.h"

#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/packed_weight.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail::int8 {

// Software prefetch distance into a group's stream: a group is one sequential run (16-18 KB for
// 2048 columns), yet the hardware prefetchers alone let one core reach only ~half the memory's
// read bandwidth on it; 4 KB ahead (measured 2-8 KB with matmul_bench; 4 KB best) covers the
// DRAM latency at full rate.
constexpr int kPrefetchBytes = 4096;

inline void prefetch_block(const __m512i* p, int lines) {
  for (int j = 0; j < lines; ++j) _mm_prefetch(reinterpret_cast<const char*>(p + j) + kPrefetchBytes, _MM_HINT_T0);
}

// The first kPrefetchBytes of a run of groups, which prefetch_block's look-ahead never covers: a
// run starts where the thread's previous one did not end, so the hardware prefetchers have no
// stream there yet.
inline void prefetch_run_start(const void* p) {
  for (int off = 0; off < kPrefetchBytes; off += 64) _mm_prefetch(static_cast<const char*>(p) + off, _MM_HINT_T0);
}

inline __m512i bcast(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// acc + the dot products of w's unsigned bytes, per dword lane, with the four signed bytes at p.
// vpdpbusd takes those four bytes as an embedded broadcast ({1to16}); GCC 12 loads them with a
// separate vpbroadcastd instead -- eight more instructions per 16 x 32 block of a decode loop that
// runs at its instruction rate whenever a neighbour shares the core -- so for GCC it is spelled out.
inline __m512i dot_bcast(__m512i acc, __m512i w, const int8_t* p) {
#if defined(__GNUC__) && !defined(__clang__)
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
#else
  return _mm512_dpbusd_epi32(acc, w, bcast(p));
#endif
}

// The 16 rows' integer dot products of one 32-column block of nibbles with 32 int8 activations:
// l* hold the low nibbles (elements 0..15), h* the high ones as 16 x nibble (16..31), so the
// high half's sum is divided by 16 exactly (an arithmetic shift of a multiple of 16). The two
// halves come back apart for types with a scale per 16 elements.
struct HalfDots {
  __m512i lo, hi;
};
inline HalfDots nibble_half_dots(const __m512i (&l)[4], const __m512i (&h)[4], const int8_t* xq) {
  __m512i lo = dot_bcast(_mm512_setzero_si512(), l[0], xq);
  __m512i hi = dot_bcast(_mm512_setzero_si512(), h[0], xq + 16);
  lo = dot_bcast(lo, l[1], xq + 4);
  hi = dot_bcast(hi, h[1], xq + 20);
  lo = dot_bcast(lo, l[2], xq + 8);
  hi = dot_bcast(hi, h[2], xq + 24);
  lo = dot_bcast(lo, l[3], xq + 12);
  hi = dot_bcast(hi, h[3], xq + 28);
  return {lo, _mm512_srai_epi32(hi, 4)};
}
inline __m512i nibble_dot(const __m512i (&l)[4], const __m512i (&h)[4], const int8_t* xq) {
  const HalfDots d = nibble_half_dots(l, h, xq);
  return _mm512_add_epi32(d.lo, d.hi);
}

// Splits four zmm of packed nibbles into the low nibbles and 16 x the high ones (for nibble_dot).
inline void split_nibbles(const __m512i* qs, __m512i (&l)[4], __m512i (&h)[4]) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(char(0xF0));
  for (int j = 0; j < 4; ++j) {
    const __m512i w = _mm512_load_si512(qs + j);
    l[j] = _mm512_and_si512(w, lo_mask);
    h[j] = _mm512_and_si512(w, hi_mask);
  }
}

// The two halves' dot products of eight zmm of bytes (v[0..3]: elements 0..15, v[4..7]: 16..31).
inline HalfDots byte_half_dots(const __m512i (&v)[8], const int8_t* xq) {
  __m512i s0 = dot_bcast(_mm512_setzero_si512(), v[0], xq);
  __m512i s1 = dot_bcast(_mm512_setzero_si512(), v[4], xq + 16);
  s0 = dot_bcast(s0, v[1], xq + 4);
  s1 = dot_bcast(s1, v[5], xq + 20);
  s0 = dot_bcast(s0, v[2], xq + 8);
  s1 = dot_bcast(s1, v[6], xq + 24);
  s0 = dot_bcast(s0, v[3], xq + 12);
  s1 = dot_bcast(s1, v[7], xq + 28);
  return {s0, s1};
}
inline __m512i byte_dot(const __m512i (&v)[8], const int8_t* xq) {
  const HalfDots d = byte_half_dots(v, xq);
  return _mm512_add_epi32(d.lo, d.hi);
}

// Five-bit quants: the packed nibbles plus, after them, eight 64-bit masks whose bit 4 lane + t
// is the fifth bit of byte t of lane `lane` of v[j]. Unpacked to bytes 0..31 (the high nibbles
// shifted down: 16 x 31 would not fit a byte).
inline void unpack_five_bits(const __m512i* qs, __m512i (&v)[8]) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
  const __mmask64* fifth = reinterpret_cast<const __mmask64*>(qs + 4);
  for (int j = 0; j < 4; ++j) {
    const __m512i w = _mm512_load_si512(qs + j);
    const __m512i lo = _mm512_and_si512(w, lo_mask);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), lo_mask);
    v[j] = _mm512_mask_add_epi8(lo, fifth[j], lo, sixteen);
    v[4 + j] = _mm512_mask_add_epi8(hi, fifth[4 + j], hi, sixteen);
  }
}

// Two-bit quants: vector 4z + k is bits 2k, 2k+1 of the bytes of zmm z. Three-bit quants then
// add 4 where eight masks after them (laid out as the five-bit ones) have their bit set.
inline void unpack_two_bits(const __m512i* qs, __m512i (&v)[8]) {
  const __m512i three = _mm512_set1_epi8(3);
  for (int z = 0; z < 2; ++z) {
    const __m512i w = _mm512_load_si512(qs + z);
    v[4 * z] = _mm512_and_si512(w, three);
    v[4 * z + 1] = _mm512_and_si512(_mm512_srli_epi16(w, 2), three);
    v[4 * z + 2] = _mm512_and_si512(_mm512_srli_epi16(w, 4), three);
    v[4 * z + 3] = _mm512_and_si512(_mm512_srli_epi16(w, 6), three);
  }
}
inline void unpack_three_bits(const __m512i* qs, __m512i (&v)[8]) {
  unpack_two_bits(qs, v);
  const __m512i four = _mm512_set1_epi8(4);
  const __mmask64* third = reinterpret_cast<const __mmask64*>(qs + 2);
  for (int j = 0; j < 8; ++j) v[j] = _mm512_mask_add_epi8(v[j], third[j], v[j], four);
}

// Six-bit quants: the nibbles, then two zmm whose bits 2k, 2k+1 (vector 4z + k, as the two-bit
// fields) are the top two bits: shifted to bits 4-5 and merged in with one vpternlog each.
inline void unpack_six_bits(const __m512i* qs, __m512i (&v)[8]) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), top = _mm512_set1_epi8(0x30);
  const __m512i t0 = _mm512_load_si512(qs + 4), t1 = _mm512_load_si512(qs + 5);
  const __m512i high[8] = {_mm512_slli_epi16(t0, 4), _mm512_slli_epi16(t0, 2), t0, _mm512_srli_epi16(t0, 2),
                           _mm512_slli_epi16(t1, 4), _mm512_slli_epi16(t1, 2), t1, _mm512_srli_epi16(t1, 2)};
  for (int j = 0; j < 4; ++j) {
    const __m512i w = _mm512_load_si512(qs + j);
    // low | (high & 0x30): 0xF8 is A | (B & C) over the operands (A, B, C).
    v[j] = _mm512_ternarylogic_epi32(_mm512_and_si512(w, lo_mask), high[j], top, 0xF8);
    v[4 + j] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(w, 4), lo_mask), high[4 + j], top, 0xF8);
  }
}

// The 16 IQ4 levels + 128 (unsigned, as vpdpbusd wants them) in each 128-bit lane.
inline __m512i iq4_levels_plus_128() {
  return _mm512_broadcast_i32x4(
      _mm_add_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlLevels)), _mm_set1_epi8(char(128))));
}

// IQ4 quants: each nibble looked up in the 16 levels + 128 (unsigned, as vpdpbusd wants them);
// `levels` holds them in each 128-bit lane.
inline void unpack_levels(const __m512i* qs, __m512i levels, __m512i (&v)[8]) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0F);
  for (int j = 0; j < 4; ++j) {
    const __m512i w = _mm512_load_si512(qs + j);
    v[j] = _mm512_shuffle_epi8(levels, _mm512_and_si512(w, lo_mask));
    v[4 + j] = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srli_epi16(w, 4), lo_mask));
  }
}

// sum (w + kOffset) x - kOffset sum x for the 16 rows: the offsets are powers of two, so the
// correction is a broadcast load and a shift (a multiply in the integer registers and a broadcast
// from them cost two more instructions per block, in a loop that runs at its instruction rate
// whenever a neighbour shares the core).
template <int kOffset>
inline __m512i remove_offset(__m512i dot, const int32_t* x_sum) {
  static_assert(kOffset > 0 && (kOffset & (kOffset - 1)) == 0, "offsets are powers of two");
  constexpr unsigned kShift = unsigned(__builtin_ctz(unsigned(kOffset)));
  return _mm512_sub_epi32(dot, _mm512_slli_epi32(_mm512_set1_epi32(*x_sum), kShift));
}

// acc += (the block's 16 integer dot products) x (16 weight scales) x (the activation scale).
inline __m512 add_block(__m512 acc, __m512i dot, __m512 weight_scales, float x_scale) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(weight_scales, _mm512_set1_ps(x_scale)), acc);
}

inline __m512 fp16x16(const void* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p))); }
inline __m512 u8x16(const void* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))));
}
inline __m512 s8x16(const void* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))));
}

// Writes group g's 16 sums of each activation row (lanes past the view's rows are not written).
template <int M>
void store_group(const PackedGemvArgs& a, int64_t g, const __m512 (&acc)[M]) {
  const __mmask16 valid = first_lanes(a.rows - g * PackedWeight::kRows);
  for (int i = 0; i < M; ++i) _mm512_mask_storeu_ps(a.y + i * a.ldy + g * PackedWeight::kRows, valid, acc[i]);
}

// Runs K<M>::run for the view's m (1..8) with M a compile-time constant (the accumulators stay
// in registers).
template <template <int> class K>
void dispatch_m(const PackedGemvArgs& a, int64_t g0, int64_t g1) {
  switch (a.m) {
    case 1: return K<1>::run(a, g0, g1);
    case 2: return K<2>::run(a, g0, g1);
    case 3: return K<3>::run(a, g0, g1);
    case 4: return K<4>::run(a, g0, g1);
    case 5: return K<5>::run(a, g0, g1);
    case 6: return K<6>::run(a, g0, g1);
    case 7: return K<7>::run(a, g0, g1);
    default: return K<8>::run(a, g0, g1);
  }
}

// Kernels of the families in the other files (each compiled with the same flags).
void q4_0_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q8_0_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q4_1_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q5_0_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q5_1_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void iq4_nl_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q2_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q3_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q4_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q5_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void q6_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);
void iq4_xs_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1);

}  // namespace tandem::cpu::detail::int8
