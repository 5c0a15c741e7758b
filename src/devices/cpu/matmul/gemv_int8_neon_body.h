// The aarch64 decode path on packed weights (packed_weight.h), shared by two files that differ only
// in how sixteen int8 products become four row sums (TANDEM_NEON_DOT):
//   gemv_int8_dotprod.cpp  SDOT (FEAT_DotProd: 4 rows x 4 bytes into four int32 in one instruction),
//   gemv_int8_neon.cpp     plain Advanced SIMD (smull, then two pairwise adds), for cores without it.
// Include only from those files: everything here is in an anonymous namespace and uses no std::
// template (see matmul_internal.h), and the dotprod file is compiled with +dotprod.
//
// The layout was made for x86's zmm (16 rows x one dword per 64-byte line). A NEON register holds
// a quarter of a line, rows 4q..4q+3, so each 16-row group is taken as four quarters of 4 rows:
// the same unpacking as the AVX2 kernels' halves (gemv_int8_avx2.cpp), on 4 lanes. Unlike x86's
// u8 x s8 instructions, SDOT multiplies s8 x s8: every code (<= 63) and every signed level
// (Q8_0's bytes XOR 0x80 back to signed, the IQ4 levels) is an int8 operand as it is, and the
// int32 sums cannot saturate (32 x 128 x 127 per block).
#pragma once

#include <arm_neon.h>

#include <cstring>

#include "core/quant.h"
#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/packed_weight.h"

namespace tandem::cpu::detail {
namespace {

constexpr int kPrefetchBytes = 4096;  // as the x86 kernels' (measured there)

// ---- activations: int8 per 32 columns, rounded as the x86 paths round (fp32 x * (127 / amax),
// to nearest even), a non-finite block zeroed with a NaN scale that carries the poison.
void quantize_rows(const float* x, int64_t ldx, int64_t m, int64_t cols, int8_t* q, float* d, int32_t* sums,
                   int32_t* sums_lo) {
  const int64_t blocks = cols / 32;
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * ldx;
    for (int64_t b = 0; b < blocks; ++b) {
      float32x4_t v[8];
      uint32x4_t finite = vdupq_n_u32(~0u);
      float32x4_t mx = vdupq_n_f32(0.0f);
      for (int k = 0; k < 8; ++k) {
        v[k] = vld1q_f32(xi + b * 32 + 4 * k);
        const float32x4_t a = vabsq_f32(v[k]);
        finite = vandq_u32(finite, vcleq_f32(a, vdupq_n_f32(3.4e38f)));  // false for NaN and inf
        mx = vmaxq_f32(mx, a);
      }
      const bool ok = vminvq_u32(finite) != 0;
      const float amax = vmaxvq_f32(mx);
      const float scale = amax / 127.0f;
      const float inv = scale > 0 && ok ? 127.0f / amax : 0.0f;
      int32x4_t qk[8];
      for (int k = 0; k < 8; ++k) qk[k] = ok ? vcvtnq_s32_f32(vmulq_n_f32(v[k], inv)) : vdupq_n_s32(0);
      // |q| <= 127: the narrowing is exact.
      int8_t* qb = q + i * cols + b * 32;
      for (int h = 0; h < 2; ++h) {
        const int16x8_t lo = vcombine_s16(vmovn_s32(qk[4 * h]), vmovn_s32(qk[4 * h + 1]));
        const int16x8_t hi = vcombine_s16(vmovn_s32(qk[4 * h + 2]), vmovn_s32(qk[4 * h + 3]));
        vst1q_s8(qb + 16 * h, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
      }
      const int32x4_t s_lo = vaddq_s32(vaddq_s32(qk[0], qk[1]), vaddq_s32(qk[2], qk[3]));
      const int32x4_t s_hi = vaddq_s32(vaddq_s32(qk[4], qk[5]), vaddq_s32(qk[6], qk[7]));
      sums_lo[i * blocks + b] = vaddvq_s32(s_lo);
      sums[i * blocks + b] = vaddvq_s32(vaddq_s32(s_lo, s_hi));
      d[i * blocks + b] = ok ? scale : __builtin_nanf("");
    }
  }
}

// ---- the quarter (rows 4q..4q+3) of one 64-byte line of the layout, and its unpacking into
// v[8]: v[0..3] elements 0..15 (four bytes each of the four rows), v[4..7] elements 16..31.

inline uint8x16_t quarter(const uint8_t* qb, int line, int q) { return vld1q_u8(qb + line * 64 + q * 16); }
inline int8x16_t s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

inline void unpack_nibbles(const uint8_t* qb, int q, int8x16_t (&v)[8]) {
  const uint8x16_t lo = vdupq_n_u8(0x0F);
  for (int j = 0; j < 4; ++j) {
    const uint8x16_t w = quarter(qb, j, q);
    v[j] = s8(vandq_u8(w, lo));
    v[4 + j] = s8(vshrq_n_u8(w, 4));
  }
}
inline void unpack_two_bits(const uint8_t* qb, int q, int8x16_t (&v)[8]) {
  const uint8x16_t three = vdupq_n_u8(3);
  for (int z = 0; z < 2; ++z) {
    const uint8x16_t w = quarter(qb, z, q);
    v[4 * z + 0] = s8(vandq_u8(w, three));
    v[4 * z + 1] = s8(vandq_u8(vshrq_n_u8(w, 2), three));
    v[4 * z + 2] = s8(vandq_u8(vshrq_n_u8(w, 4), three));
    v[4 * z + 3] = s8(vshrq_n_u8(w, 6));
  }
}
// Adds `add` to the bytes whose bit is set in the top-bit masks at `masks`: eight 64-bit masks,
// bit (4 lane + t) for byte t of lane `lane`; this quarter's 16 bits are bytes 2q and 2q + 1.
inline void add_top_bits(const uint8_t* masks, int q, int add, int8x16_t (&v)[8]) {
  static const uint8_t kSpread[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t spread = vld1q_u8(kSpread), bit = vld1q_u8(kBit);
  const int8x16_t addend = vdupq_n_s8(int8_t(add));
  for (int j = 0; j < 8; ++j) {
    uint16_t m;
    std::memcpy(&m, masks + j * 8 + q * 2, 2);
    // Byte k gets byte k / 8 of m, then its bit k % 8 tested.
    const uint8x16_t bytes = vqtbl1q_u8(vreinterpretq_u8_u16(vdupq_n_u16(m)), spread);
    const uint8x16_t set = vtstq_u8(bytes, bit);
    v[j] = vaddq_s8(v[j], vandq_s8(s8(set), addend));
  }
}
// Six-bit quants: the top two bits, two-bit fields after the nibbles (lines 4 and 5), to bits 4-5.
inline void add_top_two_bits(const uint8_t* qb, int q, int8x16_t (&v)[8]) {
  const uint8x16_t top = vdupq_n_u8(0x30);
  for (int z = 0; z < 2; ++z) {
    const uint8x16_t t = quarter(qb, 4 + z, q);
    const uint8x16_t high[4] = {vshlq_n_u8(t, 4), vshlq_n_u8(t, 2), t, vshrq_n_u8(t, 2)};
    for (int k = 0; k < 4; ++k) v[4 * z + k] = vorrq_s8(v[4 * z + k], s8(vandq_u8(high[k], top)));
  }
}
inline void lookup_levels(int8x16_t (&v)[8]) {  // nibbles -> the signed IQ4 levels
  const int8x16_t levels = vld1q_s8(kIq4nlLevels);
  for (auto& x : v) x = vqtbl1q_s8(levels, vreinterpretq_u8_s8(x));
}

// ---- the integer dot products of a quarter block with its 32 int8 activations

inline int8x16_t bcast(const int8_t* p) {  // four activation bytes in every dword
  int32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}
// Four rows' sums over sixteen elements: v[j] holds elements 4j..4j+3 of each row.
inline int32x4_t dot16(const int8x16_t* v, const int8_t* xq) {
  int32x4_t s = vdupq_n_s32(0);
  for (int j = 0; j < 4; ++j) s = TANDEM_NEON_DOT(s, v[j], bcast(xq + 4 * j));
  return s;
}
struct Dots {
  int32x4_t lo, hi;  // elements 0..15, 16..31
};
inline Dots dots(const int8x16_t (&v)[8], const int8_t* xq) { return {dot16(v, xq), dot16(v + 4, xq + 16)}; }

#if defined(TANDEM_NEON_I8MM)
// Two activation rows at once with SMMLA (FEAT_I8MM): it multiplies a 2 x 8 int8 matrix by an
// 8 x 2 one, 32 products per instruction against SDOT's 16. Weight rows 0-1 (then 2-3) as two
// rows of 8 consecutive elements: the zip of dwords j and j + 1 of the quarter. Activations a
// and b as the other operand's two columns. Each SMMLA gives [r0.a, r0.b, r1.a, r1.b]; the
// unzips regroup them into the four rows' sums for a, then for b.
struct PairedWeights {
  int8x16_t w01[4], w23[4];  // per 8 elements: elements 0-7, 8-15, 16-23, 24-31
};
inline PairedWeights pair_rows(const int8x16_t (&v)[8]) {
  PairedWeights p;
  for (int e = 0; e < 4; ++e) {
    const int32x4_t lo = vreinterpretq_s32_s8(v[2 * e]), hi = vreinterpretq_s32_s8(v[2 * e + 1]);
    p.w01[e] = vreinterpretq_s8_s32(vzip1q_s32(lo, hi));
    p.w23[e] = vreinterpretq_s8_s32(vzip2q_s32(lo, hi));
  }
  return p;
}
inline void dots_pair(const PairedWeights& p, const int8_t* xa, const int8_t* xb, Dots& da, Dots& db) {
  int32x4_t s01[2], s23[2];
  for (int h = 0; h < 2; ++h) {
    s01[h] = s23[h] = vdupq_n_s32(0);
    for (int e = 2 * h; e < 2 * h + 2; ++e) {
      const int8x16_t x = vcombine_s8(vld1_s8(xa + 8 * e), vld1_s8(xb + 8 * e));
      s01[h] = vmmlaq_s32(s01[h], p.w01[e], x);
      s23[h] = vmmlaq_s32(s23[h], p.w23[e], x);
    }
  }
  da = {vuzp1q_s32(s01[0], s23[0]), vuzp1q_s32(s01[1], s23[1])};
  db = {vuzp2q_s32(s01[0], s23[0]), vuzp2q_s32(s01[1], s23[1])};
}
#endif

inline float32x4_t f16x4(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }
inline float32x4_t u8x4(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w))))));
}
inline float32x4_t s8x4(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(w))))));
}
inline float32x4_t cvt(int32x4_t v) { return vcvtq_f32_s32(v); }

// ---- the types: unpack a quarter block and its scales, then add each activation row's share

// Where a kernel reads: the group's blocks, their metadata, the super-block values (bytes).
struct Block {
  const uint8_t* qb;
  const uint8_t* meta;   // this block's metadata
  const uint8_t* super;  // the group's super-block region
  int64_t b, supers;
  int q;
  float32x4_t super_f32(int k) const {  // value k (d, dmin) of this block's super-block, 4 lanes
    return f16x4(super + (size_t(k) * size_t(supers) + size_t(b / 8)) * 32 + q * 8);
  }
};
struct Row {
  const int8_t* xq;
  int32_t xs, xs_lo;
  float xd;
};

// value d (q - kOffset): Q4_0 (nibbles, 8), Q5_0 (five bits, 16); Q8_0 and IQ4_NL signed, 0.
template <int kCodeBits, int kOffset>
struct ScaledBlock32 {
  struct S {
    float32x4_t d;
  };
  static S load(const Block& k, int8x16_t (&v)[8]) {
    if constexpr (kCodeBits == 8) {
      for (int j = 0; j < 8; ++j) v[j] = s8(veorq_u8(quarter(k.qb, j, k.q), vdupq_n_u8(0x80)));
    } else {
      unpack_nibbles(k.qb, k.q, v);
      if constexpr (kCodeBits == 5) add_top_bits(k.qb + 256, k.q, 16, v);
      if constexpr (kCodeBits == 0) lookup_levels(v);  // 0: IQ4_NL
    }
    return {f16x4(k.meta + k.q * 8)};
  }
  static float32x4_t add(float32x4_t acc, const Dots& d, const S& s, const Row& r) {
    const int32x4_t dot = vsubq_s32(vaddq_s32(d.lo, d.hi), vdupq_n_s32(kOffset * r.xs));
    return vfmaq_f32(acc, cvt(dot), vmulq_n_f32(s.d, r.xd));
  }
};
using Q4_0 = ScaledBlock32<4, 8>;
using Q5_0 = ScaledBlock32<5, 16>;
using Q8_0 = ScaledBlock32<8, 0>;
using IQ4_NL = ScaledBlock32<0, 0>;

// value d q + m: Q4_1, Q5_1.
template <int kCodeBits>
struct MinBlock32 {
  struct S {
    float32x4_t d, m;
  };
  static S load(const Block& k, int8x16_t (&v)[8]) {
    unpack_nibbles(k.qb, k.q, v);
    if constexpr (kCodeBits == 5) add_top_bits(k.qb + 256, k.q, 16, v);
    return {f16x4(k.meta + k.q * 8), f16x4(k.meta + 32 + k.q * 8)};
  }
  static float32x4_t add(float32x4_t acc, const Dots& d, const S& s, const Row& r) {
    const float32x4_t t = vfmaq_f32(vmulq_n_f32(s.m, float(r.xs)), cvt(vaddq_s32(d.lo, d.hi)), s.d);
    return vfmaq_n_f32(acc, t, r.xd);
  }
};
using Q4_1 = MinBlock32<4>;
using Q5_1 = MinBlock32<5>;

// Q4_K / Q5_K: d sc q - dmin m.
template <int kCodeBits>
struct KBlock {
  struct S {
    float32x4_t scale, min;
  };
  static S load(const Block& k, int8x16_t (&v)[8]) {
    unpack_nibbles(k.qb, k.q, v);
    if constexpr (kCodeBits == 5) add_top_bits(k.qb + 256, k.q, 16, v);
    return {vmulq_f32(k.super_f32(0), u8x4(k.meta + k.q * 4)), vmulq_f32(k.super_f32(1), u8x4(k.meta + 16 + k.q * 4))};
  }
  static float32x4_t add(float32x4_t acc, const Dots& d, const S& s, const Row& r) {
    const float32x4_t t = vfmsq_n_f32(vmulq_f32(cvt(vaddq_s32(d.lo, d.hi)), s.scale), s.min, float(r.xs));
    return vfmaq_n_f32(acc, t, r.xd);
  }
};
using Q4_K = KBlock<4>;
using Q5_K = KBlock<5>;

// Q3_K (three bits, value q - 4) and Q6_K (six bits, value q - 32): int8 scales per half block.
template <int kCodeBits>
struct HalfScaledBlock {
  static constexpr int kOffset = kCodeBits == 3 ? 4 : 32;
  struct S {
    float32x4_t sc0, sc1, d;
  };
  static S load(const Block& k, int8x16_t (&v)[8]) {
    if constexpr (kCodeBits == 3) {
      unpack_two_bits(k.qb, k.q, v);
      add_top_bits(k.qb + 128, k.q, 4, v);
    } else {
      unpack_nibbles(k.qb, k.q, v);
      add_top_two_bits(k.qb, k.q, v);
    }
    return {s8x4(k.meta + k.q * 4), s8x4(k.meta + 16 + k.q * 4), k.super_f32(0)};
  }
  static float32x4_t add(float32x4_t acc, const Dots& d, const S& s, const Row& r) {
    const int32x4_t lo = vsubq_s32(d.lo, vdupq_n_s32(kOffset * r.xs_lo));
    const int32x4_t hi = vsubq_s32(d.hi, vdupq_n_s32(kOffset * (r.xs - r.xs_lo)));
    const float32x4_t t = vfmaq_f32(vmulq_f32(cvt(lo), s.sc0), cvt(hi), s.sc1);
    return vfmaq_f32(acc, t, vmulq_n_f32(s.d, r.xd));
  }
};
using Q3_K = HalfScaledBlock<3>;
using Q6_K = HalfScaledBlock<6>;

// Q2_K: d sc q - dmin m per half block.
struct Q2_K {
  struct S {
    float32x4_t s0, s1, n0, n1;
  };
  static S load(const Block& k, int8x16_t (&v)[8]) {
    unpack_two_bits(k.qb, k.q, v);
    const float32x4_t d = k.super_f32(0), dmin = k.super_f32(1);
    const uint8_t* m = k.meta + k.q * 4;
    return {vmulq_f32(d, u8x4(m)), vmulq_f32(d, u8x4(m + 16)), vmulq_f32(dmin, u8x4(m + 32)),
            vmulq_f32(dmin, u8x4(m + 48))};
  }
  static float32x4_t add(float32x4_t acc, const Dots& d, const S& s, const Row& r) {
    float32x4_t t = vfmaq_f32(vmulq_f32(cvt(d.lo), s.s0), cvt(d.hi), s.s1);
    t = vfmsq_n_f32(t, s.n0, float(r.xs_lo));
    t = vfmsq_n_f32(t, s.n1, float(r.xs - r.xs_lo));
    return vfmaq_n_f32(acc, t, r.xd);
  }
};

// IQ4_XS: signed levels, d sc per block.
struct IQ4_XS {
  struct S {
    float32x4_t scale;
  };
  static S load(const Block& k, int8x16_t (&v)[8]) {
    unpack_nibbles(k.qb, k.q, v);
    lookup_levels(v);
    return {vmulq_f32(k.super_f32(0), s8x4(k.meta + k.q * 4))};
  }
  static float32x4_t add(float32x4_t acc, const Dots& d, const S& s, const Row& r) {
    return vfmaq_f32(acc, cvt(vaddq_s32(d.lo, d.hi)), vmulq_n_f32(s.scale, r.xd));
  }
};

// Every type's kernel: per group, per quarter of 4 rows, the blocks in order. The later quarters
// read the lines the first brought in (a group is one L2-resident run); only the first prefetches.
template <class T, int M>
void groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks;
  const int lines = int(w.qs_bytes_per_block / 64);
  for (int64_t g = g_begin; g < g_end; ++g) {
    const uint8_t* qs = w.qs(a.group0 + g);
    const uint8_t* meta = w.block_meta(a.group0 + g);
    const uint8_t* super = reinterpret_cast<const uint8_t*>(w.super_meta(a.group0 + g));
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    for (int q = 0; q < 4; ++q) {
      const int64_t valid = a.rows - g * PackedWeight::kRows - q * 4;
      if (valid <= 0) break;
      float32x4_t acc[M];
      for (int i = 0; i < M; ++i) acc[i] = vdupq_n_f32(0.0f);
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* qb = qs + size_t(b) * w.qs_bytes_per_block;
        if (q == 0) {
          for (int l = 0; l < lines; ++l) __builtin_prefetch(qb + l * 64 + kPrefetchBytes);
          meta_ahead.at(b);
        }
        const Block k{qb, meta + size_t(b) * w.meta_bytes_per_block, super, b, blocks / 8, q};
        int8x16_t v[8];
        const typename T::S s = T::load(k, v);
        auto row = [&](int i) {
          return Row{a.xq + i * a.xq_stride + b * 32, a.xs[i * blocks + b], a.xs_lo[i * blocks + b],
                     a.xd[i * blocks + b]};
        };
#if defined(TANDEM_NEON_I8MM)
        if constexpr (M >= 2) {
          const PairedWeights pw = pair_rows(v);
          for (int i = 0; i < M; i += 2) {
            // An odd last row pairs with itself; its twin's sums are dropped.
            const int j = i + 1 < M ? i + 1 : i;
            const Row ra = row(i), rb = row(j);
            Dots da, db;
            dots_pair(pw, ra.xq, rb.xq, da, db);
            acc[i] = T::add(acc[i], da, s, ra);
            if (j != i) acc[j] = T::add(acc[j], db, s, rb);
          }
          continue;
        }
#endif
        for (int i = 0; i < M; ++i) {
          const Row r = row(i);
          acc[i] = T::add(acc[i], dots(v, r.xq), s, r);
        }
      }
      for (int i = 0; i < M; ++i) {
        float* y = a.y + i * a.ldy + g * PackedWeight::kRows + q * 4;
        if (valid >= 4) {
          vst1q_f32(y, acc[i]);
        } else {
          float lanes[4];
          vst1q_f32(lanes, acc[i]);
          for (int64_t l = 0; l < valid; ++l) y[l] = lanes[l];
        }
      }
    }
  }
}

// m <= 8 rows: up to 4 at once, more as several passes over the weights (prefill tiles; the
// second pass hits cache).
template <class T>
void gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) {
  for (int64_t i0 = 0; i0 < a.m; i0 += 4) {
    PackedGemvArgs p = a;
    const int64_t blocks = a.w->blocks;
    p.m = a.m - i0 < 4 ? a.m - i0 : 4;
    p.xq = a.xq + i0 * a.xq_stride;
    p.xd = a.xd + i0 * blocks;
    p.xs = a.xs + i0 * blocks;
    p.xs_lo = a.xs_lo + i0 * blocks;
    p.y = a.y + i0 * a.ldy;
    switch (p.m) {
      case 1:
        groups<T, 1>(p, g0, g1);
        break;
      case 2:
        groups<T, 2>(p, g0, g1);
        break;
      case 3:
        groups<T, 3>(p, g0, g1);
        break;
      default:
        groups<T, 4>(p, g0, g1);
        break;
    }
  }
}

}  // namespace
}  // namespace tandem::cpu::detail

// The kernel table of the including file, named by it.
#define TANDEM_NEON_PACKED_TABLE(name)                                \
  namespace tandem::cpu::detail {                                     \
  extern const PackedDecodeKernels name;                              \
  const PackedDecodeKernels name = {quantize_rows,                    \
                                    {{DType::Q4_0, gemv<Q4_0>},       \
                                     {DType::Q8_0, gemv<Q8_0>},       \
                                     {DType::Q4_1, gemv<Q4_1>},       \
                                     {DType::Q5_0, gemv<Q5_0>},       \
                                     {DType::Q5_1, gemv<Q5_1>},       \
                                     {DType::IQ4_NL, gemv<IQ4_NL>},   \
                                     {DType::Q2_K, gemv<Q2_K>},       \
                                     {DType::Q3_K, gemv<Q3_K>},       \
                                     {DType::Q4_K, gemv<Q4_K>},       \
                                     {DType::Q5_K, gemv<Q5_K>},       \
                                     {DType::Q6_K, gemv<Q6_K>},       \
                                     {DType::IQ4_XS, gemv<IQ4_XS>}}}; \
  }
