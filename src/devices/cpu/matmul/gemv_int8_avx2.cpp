// The AVX2 decode path on packed weights (packed_weight.h), for x86-64 CPUs without AVX-512 VNNI:
// the same packed layout and int8 activations as gemv_int8_*_avx512.cpp, each 16-row group taken
// as two halves of 8 rows (a 64-byte line of the layout is two ymm: rows 0..7, then 8..15).
//
// Without vpdpbusd the u8 x s8 products go through vpmaddubsw (pairs summed into int16, which
// saturates) and vpmaddwd (pairs of those into int32). What keeps the int16 stage exact:
//   - codes <= 31 (two- to five-bit types): four vpmaddubsw outputs summed in int16 stay under
//     2^15 (4 x 2 x 31 x 127 = 31496), so a half-block costs four vpmaddubsw and one vpmaddwd;
//   - Q6_K's six-bit codes 0..63: two at a time (2 x 2 x 63 x 127 = 32004);
//   - signed values (Q8_0's bytes XOR 0x80, the IQ4 levels): |w| x |x| through vpsignb, one
//     vpmaddwd each (2 x 128 x 127 = 32512).
// So no high nibble is kept as 16 x nibble here (240 x 127 x 2 would saturate): both halves are
// shifted down. The scaling of each type is the AVX-512 kernels', over 8 lanes, except that Q2_K,
// Q3_K and Q6_K take their sub-block scales into the integer sums (HalfScaledBlock).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/quant.h"
#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/packed_weight.h"
#include "devices/cpu/matmul/simd_avx2.h"

namespace tandem::cpu::detail {
namespace {

constexpr int kPrefetchBytes = 4096;  // as the AVX-512 kernels' (measured there)

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// m rows of activations -> int8 per 32 columns, rounded exactly as the AVX-512 path rounds
// (fp32 x * (127 / amax), to nearest even), non-finite blocks poisoned the same way.
void quantize_rows(const float* x, int64_t ldx, int64_t m, int64_t cols, int8_t* q, float* d, int32_t* sums,
                   int32_t* sums_lo) {
  const int64_t blocks = cols / 32;
  const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(3.4e38f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * ldx;
    for (int64_t b = 0; b < blocks; ++b) {
      __m256 v[4], a[4];
      bool finite = true;
      for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(xi + b * 32 + k * 8);
        a[k] = _mm256_andnot_ps(sign, v[k]);
        finite &= _mm256_movemask_ps(_mm256_cmp_ps(a[k], big, _CMP_LE_OQ)) == 0xff;  // false for NaN
      }
      const __m256 mx = _mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3]));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
      const float amax = _mm_cvtss_f32(m4);
      const float scale = amax / 127.0f;
      const __m256 inv = _mm256_set1_ps(scale > 0 && finite ? 127.0f / amax : 0.0f);
      __m256i qk[4];
      for (int k = 0; k < 4; ++k) qk[k] = finite ? _mm256_cvtps_epi32(_mm256_mul_ps(v[k], inv)) : _mm256_setzero_si256();
      // |q| <= 127: the saturating packs are exact; they interleave dwords, `order` undoes it.
      const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(qk[0], qk[1]), _mm256_packs_epi32(qk[2], qk[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i * cols + b * 32), _mm256_permutevar8x32_epi32(p, order));
      const __m256i lo = _mm256_add_epi32(qk[0], qk[1]);
      sums_lo[i * blocks + b] = hsum_epi32(lo);
      sums[i * blocks + b] = hsum_epi32(_mm256_add_epi32(lo, _mm256_add_epi32(qk[2], qk[3])));
      d[i * blocks + b] = finite ? scale : __builtin_nanf("");
    }
  }
}

inline __m256i bcast(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __m256i half_line(const uint8_t* qb, int line, int half) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(qb + line * 64 + half * 32));
}
inline __m256 f16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 u8x8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline __m256 s8x8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// ---- unpacking one half (8 rows) of a block into v[8] (v[0..3]: elements 0..15, v[4..7]: 16..31)

inline void unpack_nibbles(const uint8_t* qb, int half, __m256i (&v)[8]) {
  const __m256i lo = _mm256_set1_epi8(0x0F);
  for (int j = 0; j < 4; ++j) {
    const __m256i w = half_line(qb, j, half);
    v[j] = _mm256_and_si256(w, lo);
    v[4 + j] = _mm256_and_si256(_mm256_srli_epi16(w, 4), lo);
  }
}
inline void unpack_two_bits(const uint8_t* qb, int half, __m256i (&v)[8]) {
  const __m256i three = _mm256_set1_epi8(3);
  for (int z = 0; z < 2; ++z) {
    const __m256i w = half_line(qb, z, half);
    for (int k = 0; k < 4; ++k) v[4 * z + k] = _mm256_and_si256(_mm256_srli_epi16(w, 2 * k), three);
  }
}

// The top bits of one dword vector: `add` in the bytes whose bit is set in the 32-bit mask at
// `mask` (bit 4 lane + t for byte t of lane `lane`), else 0.
inline __m256i top_bits(const uint8_t* mask, int add) {
  const __m256i spread =
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
  int32_t m;
  std::memcpy(&m, mask, 4);
  // Byte k of the ymm gets byte k/8 of m, then its bit k%8 picked out.
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(m), spread);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(char(add)));
}

// Adds `add` to the bytes whose bit is set in the top-bit masks at `masks` (eight 64-bit masks,
// bit 4 lane + t; this half's 32 bits are the low or high dword of each).
inline void add_top_bits(const uint8_t* masks, int half, int add, __m256i (&v)[8]) {
  for (int j = 0; j < 8; ++j) v[j] = _mm256_add_epi8(v[j], top_bits(masks + j * 8 + half * 4, add));
}
// Six-bit quants: the top two bits, two-bit fields after the nibbles (lines 4 and 5), to bits 4-5.
// Field k of such a line t, in bits 4-5 of each byte:
inline __m256i top_two_bits(__m256i t, int k) {
  const __m256i f = k == 0   ? _mm256_slli_epi16(t, 4)
                    : k == 1 ? _mm256_slli_epi16(t, 2)
                    : k == 2 ? t
                             : _mm256_srli_epi16(t, 2);
  return _mm256_and_si256(f, _mm256_set1_epi8(0x30));
}
inline void add_top_two_bits(const uint8_t* qb, int half, __m256i (&v)[8]) {
  for (int z = 0; z < 2; ++z) {
    const __m256i t = half_line(qb, 4 + z, half);
    for (int k = 0; k < 4; ++k) v[4 * z + k] = _mm256_or_si256(v[4 * z + k], top_two_bits(t, k));
  }
}
// Line j of a half-block of signed values (elements 4j..4j+3 of each of the 8 rows), alone: the
// signed types' kernels take one line at a time (see signed_dots).
inline __m256i q8_line(const uint8_t* qb, int half, int j) {
  return _mm256_xor_si256(half_line(qb, j, half), _mm256_set1_epi8(char(0x80)));
}
inline __m256i iq4_line(const uint8_t* qb, int half, int j) {
  const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlLevels)));
  const __m256i w = half_line(qb, j & 3, half);
  const __m256i code = _mm256_and_si256(j < 4 ? w : _mm256_srli_epi16(w, 4), _mm256_set1_epi8(0x0F));
  return _mm256_shuffle_epi8(levels, code);
}

// A compiler barrier: the values are in registers here. In the line-at-a-time blocks GCC otherwise
// reassociates a block's sums into a tree, computes the products of later lines before summing the
// earlier ones and spills: Q4_0's decode loop was 108 instructions per block, 9 of them stack
// accesses, the accumulators' among them; with keep after each line 103 and none. kernel_pass
// (2048 x 4096, in cache, 1 thread, Zen 3) q4_0 31.4 -> 34.6 GB/s, q4_k 27.1 -> 30.2, q8_0 43.3 ->
// 45.3. Not in five_bit_block, nor for Q3_K in two_bit_block: there it cut the spills too, but
// five_bit_block ran 5-12% slower and Q3_K no faster.
template <class... V>
inline void keep(V&... v) {
  ([&] { asm("" : "+x"(v)); }(), ...);
}

// ---- the integer dot products of the two halves of a block with its 32 int8 activations

struct Dots {
  __m256i lo, hi;
};
inline __m256i ones16() { return _mm256_set1_epi16(1); }
inline __m256i small4(const __m256i* v, const int8_t* xq) {  // codes <= 31
  __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(v[0], bcast(xq)), _mm256_maddubs_epi16(v[1], bcast(xq + 4)));
  s = _mm256_add_epi16(s, _mm256_add_epi16(_mm256_maddubs_epi16(v[2], bcast(xq + 8)), _mm256_maddubs_epi16(v[3], bcast(xq + 12))));
  return _mm256_madd_epi16(s, ones16());
}
inline Dots dots(const __m256i (&v)[8], const int8_t* xq) {  // codes <= 31
  return {small4(v, xq), small4(v + 4, xq + 16)};
}

// ---- the types: unpack a half-block and its scales, then add each activation row's share

// Where a kernel reads: the group's blocks, their metadata, the super-block values (bytes).
struct Block {
  const uint8_t* qb;
  const uint8_t* meta;   // this block's metadata
  const uint8_t* super;  // the group's super-block region
  int64_t b, supers;
  int half;
  __m128i super_f16(int k) const {  // value k (d, dmin) of this block's super-block, 8 lanes
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(super + (size_t(k) * size_t(supers) + size_t(b / 8)) * 32 + half * 16));
  }
  __m256 super_f32(int k) const { return _mm256_cvtph_ps(super_f16(k)); }
};
struct Row {
  const int8_t* xq;
  int32_t xs, xs_lo;
  float xd;
};

// value d (q - kOffset): Q4_0 (nibbles, 8), Q5_0 (five bits, 16); Q8_0 and IQ4_NL signed, 0.
template <int kCodeBits, int kOffset>
struct ScaledBlock32 {
  // The block's quants in 64-byte lines (packed_weight.h): a type's constant, and the block stride.
  static constexpr int kLines = kCodeBits == 0 ? 4 : kCodeBits;
  struct S {
    __m256 d;
  };
  static S scales(const Block& k) { return {f16x8(k.meta + k.half * 16)}; }
  static S load(const Block& k, __m256i (&v)[8]) {  // the unsigned codes (Q4_0, Q5_0)
    unpack_nibbles(k.qb, k.half, v);
    if constexpr (kCodeBits == 5) add_top_bits(k.qb + 256, k.half, 16, v);
    return scales(k);
  }
  static __m256 add(__m256 acc, const __m256i (&v)[8], const S& s, const Row& r) {
    const Dots d = dots(v, r.xq);
    return sum(acc, _mm256_add_epi32(d.lo, d.hi), s, r);
  }
  // acc + the block's contribution, from dot = sum over its 32 columns of code x activation.
  static __m256 sum(__m256 acc, __m256i dot, const S& s, const Row& r) {
    if constexpr (kOffset != 0) dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(kOffset * r.xs));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(s.d, _mm256_set1_ps(r.xd)), acc);
  }
  static constexpr bool kSignedLines = kCodeBits == 8 || kCodeBits == 0;  // Q8_0, IQ4_NL: signed_dots
  static constexpr bool kFourBitCodes = kCodeBits == 4;                   // Q4_0: four_bit_block
  static constexpr bool kFiveBitCodes = kCodeBits == 5;                   // Q5_0: five_bit_block
  static __m256i line(const Block& k, int j) {
    if constexpr (kCodeBits == 8)
      return q8_line(k.qb, k.half, j);
    else
      return iq4_line(k.qb, k.half, j);
  }
};
using Q4_0 = ScaledBlock32<4, 8>;
using Q5_0 = ScaledBlock32<5, 16>;
using Q8_0 = ScaledBlock32<8, 0>;
using IQ4_NL = ScaledBlock32<0, 0>;

// value d q + m: Q4_1, Q5_1.
template <int kCodeBits>
struct MinBlock32 {
  static constexpr int kLines = kCodeBits;
  struct S {
    __m256 d, m;
  };
  static S scales(const Block& k) { return {f16x8(k.meta + k.half * 16), f16x8(k.meta + 32 + k.half * 16)}; }
  static S load(const Block& k, __m256i (&v)[8]) {
    unpack_nibbles(k.qb, k.half, v);
    if constexpr (kCodeBits == 5) add_top_bits(k.qb + 256, k.half, 16, v);
    return scales(k);
  }
  static __m256 add(__m256 acc, const __m256i (&v)[8], const S& s, const Row& r) {
    const Dots d = dots(v, r.xq);
    return sum(acc, _mm256_add_epi32(d.lo, d.hi), s, r);
  }
  static __m256 sum(__m256 acc, __m256i dot, const S& s, const Row& r) {
    const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s.d, _mm256_mul_ps(s.m, _mm256_set1_ps(float(r.xs))));
    return _mm256_fmadd_ps(t, _mm256_set1_ps(r.xd), acc);
  }
  static constexpr bool kFourBitCodes = kCodeBits == 4;
  static constexpr bool kFiveBitCodes = kCodeBits == 5;
};
using Q4_1 = MinBlock32<4>;
using Q5_1 = MinBlock32<5>;

// Q4_K / Q5_K: d sc q - dmin m.
template <int kCodeBits>
struct KBlock {
  static constexpr int kLines = kCodeBits;
  struct S {
    __m256 scale, min;
  };
  static S scales(const Block& k) {
    return {_mm256_mul_ps(k.super_f32(0), u8x8(k.meta + k.half * 8)),
            _mm256_mul_ps(k.super_f32(1), u8x8(k.meta + 16 + k.half * 8))};
  }
  static S load(const Block& k, __m256i (&v)[8]) {
    unpack_nibbles(k.qb, k.half, v);
    if constexpr (kCodeBits == 5) add_top_bits(k.qb + 256, k.half, 16, v);
    return scales(k);
  }
  static __m256 add(__m256 acc, const __m256i (&v)[8], const S& s, const Row& r) {
    const Dots d = dots(v, r.xq);
    return sum(acc, _mm256_add_epi32(d.lo, d.hi), s, r);
  }
  static __m256 sum(__m256 acc, __m256i dot, const S& s, const Row& r) {
    const __m256 t =
        _mm256_fmsub_ps(_mm256_cvtepi32_ps(dot), s.scale, _mm256_mul_ps(s.min, _mm256_set1_ps(float(r.xs))));
    return _mm256_fmadd_ps(t, _mm256_set1_ps(r.xd), acc);
  }
  static constexpr bool kFourBitCodes = kCodeBits == 4;
  static constexpr bool kFiveBitCodes = kCodeBits == 5;
};
using Q4_K = KBlock<4>;
using Q5_K = KBlock<5>;

// Q3_K (three bits, value q - 4), Q6_K (six bits, value q - 32): int8 scales per 16 columns;
// Q2_K (two bits, value d sc q - dmin m): u8 scales and minimums per 16 columns.
// The scales are vpmaddwd's multipliers (in place of ones), so a half's sum over the block's 32
// columns of scale x code x activation is one int32 per row, and the offset comes off it as
// offset x (sc0 x the activations' sum over the first 16 columns + sc1 x over the last 16), one
// vpmaddwd more (Q2_K: m0 x the first sum + m1 x the second, times dmin): one conversion and one
// FMA per row and block, where two sums were converted and scaled in fp32. With the one-pass walk
// (one_row), TinyLlama Q6_K tg64 at 2 threads on Zen 3: 26-29 -> 35-36 tok/s (32 GB/s, the
// measured read bandwidth).
template <int kCodeBits>
struct HalfScaledBlock {
  static constexpr int kLines = kCodeBits;
  static constexpr int kBits = kCodeBits;
  static constexpr int kOffsetShift = kCodeBits == 3 ? 2 : 5;  // offsets 4 and 32
  struct S {
    __m256i sc0, sc1, sc01;  // int16 pairs per row: (sc0, sc0), (sc1, sc1), (sc0, sc1) or Q2_K's (m0, m1)
    __m256 d, dmin;
  };
  static S load(const Block& k, __m256i (&v)[8]) {
    if constexpr (kCodeBits == 2) {
      unpack_two_bits(k.qb, k.half, v);
    } else if constexpr (kCodeBits == 3) {
      unpack_two_bits(k.qb, k.half, v);
      add_top_bits(k.qb + 128, k.half, 4, v);
    } else {
      unpack_nibbles(k.qb, k.half, v);
      add_top_two_bits(k.qb, k.half, v);
    }
    return scales(k);
  }
  static S scales(const Block& k) {
    // Row r's dword is (a[r], b[r]) as two int16: the bytes interleaved, then sign-extended (Q2_K's
    // are 0..15).
    auto pairs = [&](int a, int b) {
      const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(k.meta + a + k.half * 8));
      const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(k.meta + b + k.half * 8));
      return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(lo, hi));
    };
    if constexpr (kCodeBits == 2)
      return {pairs(0, 0), pairs(16, 16), pairs(32, 48), k.super_f32(0), k.super_f32(1)};
    else
      return {pairs(0, 0), pairs(16, 16), pairs(0, 16), k.super_f32(0), _mm256_setzero_ps()};
  }
  static __m256 add(__m256 acc, const __m256i (&v)[8], const S& s, const Row& r) {
    const int8_t* xq = r.xq;
    __m256i dot;
    if constexpr (kCodeBits <= 3) {  // codes <= 7: a sub-block's four vpmaddubsw sum in int16
      __m256i s0 = _mm256_maddubs_epi16(v[0], bcast(xq)), s1 = _mm256_maddubs_epi16(v[4], bcast(xq + 16));
#pragma GCC unroll 3
      for (int j = 1; j < 4; ++j) {
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(v[j], bcast(xq + 4 * j)));
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(v[4 + j], bcast(xq + 16 + 4 * j)));
      }
      dot = _mm256_add_epi32(_mm256_madd_epi16(s0, s.sc0), _mm256_madd_epi16(s1, s.sc1));
    } else {  // codes <= 63: two vpmaddubsw per int16 sum (2 x 2 x 63 x 127 = 32004)
      auto pair = [&](int j) {
        return _mm256_add_epi16(_mm256_maddubs_epi16(v[j], bcast(xq + 4 * j)),
                                _mm256_maddubs_epi16(v[j + 1], bcast(xq + 4 * j + 4)));
      };
      dot = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(pair(0), s.sc0), _mm256_madd_epi16(pair(2), s.sc0)),
                             _mm256_add_epi32(_mm256_madd_epi16(pair(4), s.sc1), _mm256_madd_epi16(pair(6), s.sc1)));
    }
    return sum(acc, dot, s, r);
  }
  // acc + the block's share, from dot = sum over its 32 columns of scale x code x activation.
  static __m256 sum(__m256 acc, __m256i dot, const S& s, const Row& r) {
    // The activations' sums over the two sub-blocks, as int16 (|sum| <= 16 x 127).
    const __m256i xs =
        _mm256_set1_epi32(int32_t(uint32_t(uint16_t(r.xs_lo)) | uint32_t(uint16_t(r.xs - r.xs_lo)) << 16));
    if constexpr (kCodeBits == 2) {
      const __m256 mins = _mm256_cvtepi32_ps(_mm256_madd_epi16(s.sc01, xs));
      const __m256 t = _mm256_fmsub_ps(_mm256_cvtepi32_ps(dot), s.d, _mm256_mul_ps(mins, s.dmin));
      return _mm256_fmadd_ps(t, _mm256_set1_ps(r.xd), acc);
    }
    dot = _mm256_sub_epi32(dot, _mm256_slli_epi32(_mm256_madd_epi16(s.sc01, xs), kOffsetShift));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(s.d, _mm256_set1_ps(r.xd)), acc);
  }
};
using Q2_K = HalfScaledBlock<2>;  // one_row: two_bit_block (Q2_K, Q3_K)
using Q3_K = HalfScaledBlock<3>;
using Q6_K = HalfScaledBlock<6>;

// IQ4_XS: signed levels, d sc per block.
struct IQ4_XS {
  static constexpr int kLines = 4;
  struct S {
    __m256 scale;
  };
  static constexpr bool kSignedLines = true;
  static S scales(const Block& k) { return {_mm256_mul_ps(k.super_f32(0), s8x8(k.meta + k.half * 8))}; }
  static __m256i line(const Block& k, int j) { return iq4_line(k.qb, k.half, j); }
  static __m256 sum(__m256 acc, __m256i dot, const S& s, const Row& r) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(s.scale, _mm256_set1_ps(r.xd)), acc);
  }
};

template <class T>
constexpr bool signed_lines() {
  if constexpr (requires { T::kSignedLines; }) return T::kSignedLines;
  return false;
}

// Signed values need vpsignb's trick per product (|w| x sign(w) x), and with all eight lines
// unpacked, |w| beside them and four rows' sums there are more values than ymm registers: GCC kept
// the sums on the stack and took |w| again for every row. One line at a time: the line and its
// |w| are live, one int32 sum per activation row (y[i] = sum over the 32 columns of the block).
// A TinyLlama Q8_0 projection (matmul_bench shape 1, m = 512, 2 threads, Zen 3): 3.4-3.6 -> 3.0 ms.
// The products of signed weights w with signed activations x, pairs summed into int32:
// |w| x (x with w's sign), since vpmaddubsw takes one operand unsigned.
inline __m256i signed_products(__m256i w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)), ones16());
}

template <class T, int M>
inline void signed_dots(const Block& k, const int8_t* xq, int64_t stride, __m256i (&dot)[M]) {
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) dot[i] = _mm256_setzero_si256();
    // Not unrolled: GCC then hoisted the next lines' loads and broadcasts and ran out of registers.
#pragma GCC unroll 1
  for (int j = 0; j < 8; ++j) {
    const __m256i w = T::line(k, j);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) dot[i] = _mm256_add_epi32(dot[i], signed_products(w, bcast(xq + i * stride + 4 * j)));
  }
}

template <class T>
constexpr bool four_bit_codes() {
  if constexpr (requires { T::kFourBitCodes; }) return T::kFourBitCodes;
  return false;
}

template <class T>
constexpr bool five_bit_codes() {
  if constexpr (requires { T::kFiveBitCodes; }) return T::kFiveBitCodes;
  return false;
}

// Decode (one activation row): both halves of a group in one pass over its blocks, so each
// broadcast of the activations serves 16 rows instead of 8 and the two halves' sums are
// independent chains. kBlock(k0, k1, r, acc0, acc1) adds the block's share of rows 0..7 / 8..15 of
// the group to acc0 / acc1. The block's lines are T's constant, so the prefetch of each is one
// instruction (a loop over w.qs_bytes_per_block / 64 was about 20 of Q4_0's ~120 per block).
template <class T, auto kBlock>
void one_row(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks;
  constexpr size_t kBlockBytes = size_t(T::kLines) * 64;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const uint8_t* qs = w.qs(a.group0 + g);
    const uint8_t* meta = w.block_meta(a.group0 + g);
    const uint8_t* super = reinterpret_cast<const uint8_t*>(w.super_meta(a.group0 + g));
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* qb = qs + size_t(b) * kBlockBytes;
#pragma GCC unroll 8
      for (int l = 0; l < T::kLines; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(qb + l * 64) + kPrefetchBytes, _MM_HINT_T0);
      meta_ahead.at(b);
      const uint8_t* mb = meta + size_t(b) * w.meta_bytes_per_block;
      const Block k0{qb, mb, super, b, blocks / 8, 0}, k1{qb, mb, super, b, blocks / 8, 1};
      kBlock(k0, k1, Row{a.xq + b * 32, a.xs[b], a.xs_lo[b], a.xd[b]}, acc0, acc1);
    }
    const int64_t valid = a.rows - g * PackedWeight::kRows;
    _mm256_maskstore_ps(a.y + g * PackedWeight::kRows, first_lanes8(valid), acc0);
    if (valid > 8) _mm256_maskstore_ps(a.y + g * PackedWeight::kRows + 8, first_lanes8(valid - 8), acc1);
  }
}

// Codes <= 15 (Q4_0, Q4_1, Q4_K): all eight vpmaddubsw of a half-block sum in int16
// (8 x 2 x 15 x 127 = 30480 < 2^15) before one vpmaddwd, about a fifth fewer instructions per
// weight than groups<T, 1>. TinyLlama Q4_0 decode matmuls (matmul_bench BM_TinyLlama, Zen 3, 19 /
// 31 GB/s read bandwidth at 1 / 2 threads): 24 -> 29 tok/s at 1 thread, 42 -> 48.5 at 2; tandem
// bench tg128 at 2 threads 39.5 -> 51.4.
template <class T>
inline void four_bit_block(const Block& k0, const Block& k1, const Row& r, __m256& acc0, __m256& acc1) {
  const int8_t* xq = r.xq;
  const __m256i low = _mm256_set1_epi8(0x0F);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m256i x_lo = bcast(xq + 4 * j), x_hi = bcast(xq + 16 + 4 * j);
    // A line's low nibbles are columns 4j..4j+3, its high nibbles 16 + 4j..
    auto nibble_products = [&](__m256i w) {
      return _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(w, low), x_lo),
                              _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(w, 4), low), x_hi));
    };
    s0 = _mm256_add_epi16(s0, nibble_products(half_line(k0.qb, j, 0)));
    s1 = _mm256_add_epi16(s1, nibble_products(half_line(k0.qb, j, 1)));
    keep(s0, s1);
  }
  acc0 = T::sum(acc0, _mm256_madd_epi16(s0, ones16()), T::scales(k0), r);
  acc1 = T::sum(acc1, _mm256_madd_epi16(s1, ones16()), T::scales(k1), r);
}

// Five-bit codes (Q5_0, Q5_1, Q5_K): as four_bit_block, a line of both halves at a time, each code
// vector given its fifth bits as it is unpacked; four int16 sums (a sum of four vpmaddubsw of codes
// <= 31 stays exact, see the top of the file). Unpacking all eight code vectors of a half first
// (T::load) GCC spilled; here the activations' broadcasts also serve both halves. kernel_pass q5_k /
// q5_0, 16384 x 4096, 1 thread on Zen 3: 15.0-15.5 -> 16.6-17.1 / 15.4-16.3 -> 18.0-18.2 GB/s;
// TinyLlama Q5_K_M tg64 at 1 thread 17.8-20.3 -> 20.1-21.0 tok/s.
template <class T>
inline void five_bit_block(const Block& k0, const Block& k1, const Row& r, __m256& acc0, __m256& acc1) {
  const int8_t* xq = r.xq;
  const uint8_t* masks = k0.qb + 256;
  const __m256i low = _mm256_set1_epi8(0x0F);
  __m256i s[2][2] = {{_mm256_setzero_si256(), _mm256_setzero_si256()},
                     {_mm256_setzero_si256(), _mm256_setzero_si256()}};
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m256i x_lo = bcast(xq + 4 * j), x_hi = bcast(xq + 16 + 4 * j);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i w = half_line(k0.qb, j, half);
      const __m256i lo = _mm256_add_epi8(_mm256_and_si256(w, low), top_bits(masks + j * 8 + half * 4, 16));
      const __m256i hi =
          _mm256_add_epi8(_mm256_and_si256(_mm256_srli_epi16(w, 4), low), top_bits(masks + (4 + j) * 8 + half * 4, 16));
      s[half][0] = _mm256_add_epi16(s[half][0], _mm256_maddubs_epi16(lo, x_lo));
      s[half][1] = _mm256_add_epi16(s[half][1], _mm256_maddubs_epi16(hi, x_hi));
    }
  }
  const __m256i dot0 = _mm256_add_epi32(_mm256_madd_epi16(s[0][0], ones16()), _mm256_madd_epi16(s[0][1], ones16()));
  const __m256i dot1 = _mm256_add_epi32(_mm256_madd_epi16(s[1][0], ones16()), _mm256_madd_epi16(s[1][1], ones16()));
  acc0 = T::sum(acc0, dot0, T::scales(k0), r);
  acc1 = T::sum(acc1, dot1, T::scales(k1), r);
}

// Q2_K and Q3_K: likewise a line of both halves at a time; line z's two-bit fields k are columns
// 16z + 4k..16z + 4k + 3, Q3_K's third bits (+4) in mask 4z + k. Each sub-block's four vpmaddubsw
// of codes <= 7 sum in int16, then its scale is vpmaddwd's multiplier (HalfScaledBlock). kernel_pass
// 1 thread on Zen 3: q3_k (16384 x 4096) 10.3-10.5 -> 11.0-11.4 GB/s; q2_k (2048 x 4096, in
// cache), whose halves were unpacked whole (T::load) and scaled in fp32 before, 11.6 -> 14.2 GB/s.
template <class T>
inline void two_bit_block(const Block& k0, const Block& k1, const Row& r, __m256& acc0, __m256& acc1) {
  const uint8_t* masks = k0.qb + 128;
  const __m256i three = _mm256_set1_epi8(3);
  __m256i s[2][2] = {{_mm256_setzero_si256(), _mm256_setzero_si256()},
                     {_mm256_setzero_si256(), _mm256_setzero_si256()}};
#pragma GCC unroll 2
  for (int z = 0; z < 2; ++z) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i x = bcast(r.xq + 16 * z + 4 * k);
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const __m256i w = half_line(k0.qb, z, half);
        __m256i code = _mm256_and_si256(_mm256_srli_epi16(w, 2 * k), three);
        if constexpr (T::kBits == 3) code = _mm256_add_epi8(code, top_bits(masks + (4 * z + k) * 8 + half * 4, 4));
        s[half][z] = _mm256_add_epi16(s[half][z], _mm256_maddubs_epi16(code, x));
      }
      if constexpr (T::kBits == 2) keep(s[0][z], s[1][z]);  // Q3_K: no faster with it
    }
  }
  const typename T::S s0 = T::scales(k0), s1 = T::scales(k1);
  acc0 = T::sum(acc0, _mm256_add_epi32(_mm256_madd_epi16(s[0][0], s0.sc0), _mm256_madd_epi16(s[0][1], s0.sc1)), s0, r);
  acc1 = T::sum(acc1, _mm256_add_epi32(_mm256_madd_epi16(s[1][0], s1.sc0), _mm256_madd_epi16(s[1][1], s1.sc1)), s1, r);
}

// Q6_K: a line of both halves at a time as well (a half after the other, GCC kept the activations'
// broadcasts for the second half on the stack: 5-10% slower). Line j's low nibbles are columns
// 4j.., its high ones 16 + 4j..; their top two bits are field j of lines 4 and 5
// (add_top_two_bits). Two lines' products sum in int16 (codes <= 63), then the sub-block's scale is
// vpmaddwd's multiplier. kernel_pass q6_k (2048 x 4096, in cache, 1 thread, Zen 3), where a
// half's eight code vectors were unpacked at once (T::load) and spilled: 22.8-24.5 -> 25.2-26.7
// GB/s.
template <class T>
inline void six_bit_block(const Block& k0, const Block& k1, const Row& r, __m256& acc0, __m256& acc1) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  const typename T::S sc[2] = {T::scales(k0), T::scales(k1)};
  __m256i dot[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 2
  for (int p = 0; p < 2; ++p) {
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      __m256i lo_sum = _mm256_setzero_si256(), hi_sum = _mm256_setzero_si256();
#pragma GCC unroll 2
      for (int q = 0; q < 2; ++q) {
        const int j = 2 * p + q;
        const __m256i w = half_line(k0.qb, j, half);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(w, low), top_two_bits(half_line(k0.qb, 4, half), j));
        const __m256i hi =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(w, 4), low), top_two_bits(half_line(k0.qb, 5, half), j));
        lo_sum = _mm256_add_epi16(lo_sum, _mm256_maddubs_epi16(lo, bcast(r.xq + 4 * j)));
        hi_sum = _mm256_add_epi16(hi_sum, _mm256_maddubs_epi16(hi, bcast(r.xq + 16 + 4 * j)));
        keep(lo_sum, hi_sum);
      }
      dot[half] = _mm256_add_epi32(dot[half], _mm256_add_epi32(_mm256_madd_epi16(lo_sum, sc[half].sc0),
                                                               _mm256_madd_epi16(hi_sum, sc[half].sc1)));
    }
  }
  acc0 = T::sum(acc0, dot[0], sc[0], r);
  acc1 = T::sum(acc1, dot[1], sc[1], r);
}

// Signed values (Q8_0, IQ4_NL, IQ4_XS): TinyLlama Q8_0 tg64 on Zen 3, 1 thread 12.5 -> 15.2 tok/s,
// 2 threads 21.4 -> 26.7 (31 GB/s, the measured read bandwidth).
template <class T>
inline void signed_block(const Block& k0, const Block& k1, const Row& r, __m256& acc0, __m256& acc1) {
  __m256i d0 = _mm256_setzero_si256(), d1 = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    const __m256i x = bcast(r.xq + 4 * j), w0 = T::line(k0, j), w1 = T::line(k1, j);
    d0 = _mm256_add_epi32(d0, signed_products(w0, x));
    d1 = _mm256_add_epi32(d1, signed_products(w1, x));
    keep(d0, d1);
  }
  acc0 = T::sum(acc0, d0, T::scales(k0), r);
  acc1 = T::sum(acc1, d1, T::scales(k1), r);
}

// Prefill tiles (2 to 4 activation rows) of every type: per group, per half of 8 rows, the blocks
// in order. The second half reads the lines the first brought in (a group is one L2-resident
// run); only the first prefetches.
template <class T, int M>
void groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks;
  constexpr size_t kBlockBytes = size_t(T::kLines) * 64;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const uint8_t* qs = w.qs(a.group0 + g);
    const uint8_t* meta = w.block_meta(a.group0 + g);
    const uint8_t* super = reinterpret_cast<const uint8_t*>(w.super_meta(a.group0 + g));
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    for (int half = 0; half < 2; ++half) {
      const int64_t valid = a.rows - g * PackedWeight::kRows - half * 8;
      if (valid <= 0) break;
      __m256 acc[M];
      for (int i = 0; i < M; ++i) acc[i] = _mm256_setzero_ps();
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* qb = qs + size_t(b) * kBlockBytes;
        if (half == 0) {
#pragma GCC unroll 8
          for (int l = 0; l < T::kLines; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(qb + l * 64) + kPrefetchBytes, _MM_HINT_T0);
          meta_ahead.at(b);
        }
        const Block k{qb, meta + size_t(b) * w.meta_bytes_per_block, super, b, blocks / 8, half};
        const int8_t* xq = a.xq + b * 32;
        auto row = [&](int i) {
          return Row{xq + i * a.xq_stride, a.xs[i * blocks + b], a.xs_lo[i * blocks + b], a.xd[i * blocks + b]};
        };
        if constexpr (signed_lines<T>()) {
          __m256i dot[M];
          signed_dots<T, M>(k, xq, a.xq_stride, dot);
          const typename T::S s = T::scales(k);
          for (int i = 0; i < M; ++i) acc[i] = T::sum(acc[i], dot[i], s, row(i));
        } else {
          __m256i v[8];
          const typename T::S s = T::load(k, v);
          for (int i = 0; i < M; ++i) acc[i] = T::add(acc[i], v, s, row(i));
        }
      }
      const __m256i mask = first_lanes8(valid);
      for (int i = 0; i < M; ++i) _mm256_maskstore_ps(a.y + i * a.ldy + g * PackedWeight::kRows + half * 8, mask, acc[i]);
    }
  }
}

// m <= 8 rows: up to 4 at once (sixteen ymm registers: eight for the block, the rest for sums),
// more as several passes over the weights (prefill tiles; the second pass hits cache).
template <class T>
void gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) {
  for (int64_t i0 = 0; i0 < a.m; i0 += 4) {
    PackedGemvArgs p = a;
    const int64_t blocks = a.w->blocks;
    p.m = std::min<int64_t>(4, a.m - i0);
    p.xq = a.xq + i0 * a.xq_stride;
    p.xd = a.xd + i0 * blocks;
    p.xs = a.xs + i0 * blocks;
    p.xs_lo = a.xs_lo + i0 * blocks;
    p.y = a.y + i0 * a.ldy;
    switch (p.m) {
      case 1:
        if constexpr (four_bit_codes<T>())
          one_row<T, four_bit_block<T>>(p, g0, g1);
        else if constexpr (five_bit_codes<T>())
          one_row<T, five_bit_block<T>>(p, g0, g1);
        else if constexpr (std::is_same_v<T, Q2_K> || std::is_same_v<T, Q3_K>)
          one_row<T, two_bit_block<T>>(p, g0, g1);
        else if constexpr (std::is_same_v<T, Q6_K>)
          one_row<T, six_bit_block<T>>(p, g0, g1);
        else if constexpr (signed_lines<T>())
          one_row<T, signed_block<T>>(p, g0, g1);
        else
          static_assert(signed_lines<T>(), "a packed type without a one-row block");
        break;
      case 2: groups<T, 2>(p, g0, g1); break;
      case 3: groups<T, 3>(p, g0, g1); break;
      default: groups<T, 4>(p, g0, g1); break;
    }
  }
}

}  // namespace

extern const PackedDecodeKernels kAvx2Packed;
const PackedDecodeKernels kAvx2Packed = {quantize_rows,
                                         {{DType::Q4_0, gemv<Q4_0>},
                                          {DType::Q8_0, gemv<Q8_0>},
                                          {DType::Q4_1, gemv<Q4_1>},
                                          {DType::Q5_0, gemv<Q5_0>},
                                          {DType::Q5_1, gemv<Q5_1>},
                                          {DType::IQ4_NL, gemv<IQ4_NL>},
                                          {DType::Q2_K, gemv<Q2_K>},
                                          {DType::Q3_K, gemv<Q3_K>},
                                          {DType::Q4_K, gemv<Q4_K>},
                                          {DType::Q5_K, gemv<Q5_K>},
                                          {DType::Q6_K, gemv<Q6_K>},
                                          {DType::IQ4_XS, gemv<IQ4_XS>}}};

}  // namespace tandem::cpu::detail
