// AVX-512 VNNI decode kernels on packed weights of the 256-column super-block types: Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_XS (layouts in packed_weight.h). Each 32-column block is one of the block32 kernels'
// blocks (nibbles, five-bit quants, bytes, or IQ4 levels) with its own small scales against the
// super-block's fp16 d (and dmin), formed in fp32 per block as ggml's dequantization forms them.
#include "core/quant.h"
#include "devices/cpu/matmul/int8_blocks_avx512.h"

namespace tandem::cpu::detail::int8 {
namespace {

// Q4_K / Q5_K: the weight is d sc q - dmin m, so with x = xd xq the block adds
// xd ((d sc) dot(q, xq) - (dmin m) sum(xq)).
template <bool kFiveBits, int M>
void k_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks, supers = blocks / 8;
  constexpr int kLines = kFiveBits ? 5 : 4;
  if (g_begin < g_end) prefetch_run_start(w.qs(a.group0 + g_begin));
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const uint8_t* meta = w.block_meta(a.group0 + g);
    const uint16_t* super = w.super_meta(a.group0 + g);
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < supers; ++sb) {
      const __m512 d = fp16x16(super + sb * 16), dmin = fp16x16(super + (supers + sb) * 16);
      for (int64_t b = sb * 8; b < sb * 8 + 8; ++b) {
        prefetch_block(qs + b * kLines, kLines);
        meta_ahead.at(b);
        const __m512 scale = _mm512_mul_ps(d, u8x16(meta + b * 32));
        const __m512 min = _mm512_mul_ps(dmin, u8x16(meta + b * 32 + 16));
        __m512i l[4], h[4], v[8];
        if constexpr (kFiveBits) {
          unpack_five_bits(qs + b * kLines, v);
        } else {
          split_nibbles(qs + b * kLines, l, h);
        }
        for (int i = 0; i < M; ++i) {
          const int8_t* xq = a.xq + i * a.xq_stride + b * 32;
          __m512i dot;
          if constexpr (kFiveBits) {
            dot = byte_dot(v, xq);
          } else {
            dot = nibble_dot(l, h, xq);
          }
          const __m512 t = _mm512_fmsub_ps(_mm512_cvtepi32_ps(dot), scale,
                                           _mm512_mul_ps(min, _mm512_set1_ps(float(a.xs[i * blocks + b]))));
          acc[i] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.xd[i * blocks + b]), acc[i]);
        }
      }
    }
    store_group<M>(a, g, acc);
  }
}

// Q2_K: two-bit quants whose halves (16 columns) have their own scale and minimum: the block
// adds xd (d (sc0 dot0 + sc1 dot1) - dmin (m0 sum_lo + m1 sum_hi)).
template <int M>
void q2_k_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks, supers = blocks / 8;
  if (g_begin < g_end) prefetch_run_start(w.qs(a.group0 + g_begin));
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const uint8_t* meta = w.block_meta(a.group0 + g);
    const uint16_t* super = w.super_meta(a.group0 + g);
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < supers; ++sb) {
      const __m512 d = fp16x16(super + sb * 16), dmin = fp16x16(super + (supers + sb) * 16);
      for (int64_t b = sb * 8; b < sb * 8 + 8; ++b) {
        prefetch_block(qs + b * 2, 2);
        meta_ahead.at(b);
        __m512i v[8];
        unpack_two_bits(qs + b * 2, v);
        const uint8_t* mb = meta + b * 64;
        const __m512 s0 = _mm512_mul_ps(d, u8x16(mb)), s1 = _mm512_mul_ps(d, u8x16(mb + 16));
        const __m512 n0 = _mm512_mul_ps(dmin, u8x16(mb + 32)), n1 = _mm512_mul_ps(dmin, u8x16(mb + 48));
        for (int i = 0; i < M; ++i) {
          const HalfDots s = byte_half_dots(v, a.xq + i * a.xq_stride + b * 32);
          const int32_t lo = a.xs_lo[i * blocks + b], hi = a.xs[i * blocks + b] - lo;
          __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s.hi), s1, _mm512_mul_ps(_mm512_cvtepi32_ps(s.lo), s0));
          t = _mm512_fnmadd_ps(n0, _mm512_set1_ps(float(lo)), t);
          t = _mm512_fnmadd_ps(n1, _mm512_set1_ps(float(hi)), t);
          acc[i] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.xd[i * blocks + b]), acc[i]);
        }
      }
    }
    store_group<M>(a, g, acc);
  }
}

// Q3_K (three-bit quants, value q - 4) and Q6_K (six-bit, value q - 32): the halves of a block
// have their own int8 scales, so it adds xd d (sc0 (dot0 - c sum_lo) + sc1 (dot1 - c sum_hi)).
template <int kCodeBits, int M>
void half_scaled_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  constexpr int kLines = kCodeBits == 3 ? 3 : 6, kOffset = kCodeBits == 3 ? 4 : 32;
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks, supers = blocks / 8;
  if (g_begin < g_end) prefetch_run_start(w.qs(a.group0 + g_begin));
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const uint8_t* meta = w.block_meta(a.group0 + g);
    const uint16_t* super = w.super_meta(a.group0 + g);
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < supers; ++sb) {
      const __m512 d = fp16x16(super + sb * 16);
      for (int64_t b = sb * 8; b < sb * 8 + 8; ++b) {
        prefetch_block(qs + b * kLines, kLines);
        meta_ahead.at(b);
        __m512i v[8];
        if constexpr (kCodeBits == 3) {
          unpack_three_bits(qs + b * kLines, v);
        } else {
          unpack_six_bits(qs + b * kLines, v);
        }
        const __m512 sc0 = s8x16(meta + b * 32), sc1 = s8x16(meta + b * 32 + 16);
        for (int i = 0; i < M; ++i) {
          HalfDots s = byte_half_dots(v, a.xq + i * a.xq_stride + b * 32);
          const int32_t lo = a.xs_lo[i * blocks + b], hi = a.xs[i * blocks + b] - lo;
          s.lo = _mm512_sub_epi32(s.lo, _mm512_set1_epi32(kOffset * lo));
          s.hi = _mm512_sub_epi32(s.hi, _mm512_set1_epi32(kOffset * hi));
          const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s.hi), sc1, _mm512_mul_ps(_mm512_cvtepi32_ps(s.lo), sc0));
          acc[i] = _mm512_fmadd_ps(t, _mm512_mul_ps(d, _mm512_set1_ps(a.xd[i * blocks + b])), acc[i]);
        }
      }
    }
    store_group<M>(a, g, acc);
  }
}

// IQ4_XS: IQ4 levels + 128 with an int8 scale per block: the block adds
// xd (d sc) (dot - 128 sum(xq)).
template <int M>
void iq4_xs_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks, supers = blocks / 8;
  const __m512i levels = iq4_levels_plus_128();
  if (g_begin < g_end) prefetch_run_start(w.qs(a.group0 + g_begin));
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const uint8_t* meta = w.block_meta(a.group0 + g);
    const uint16_t* super = w.super_meta(a.group0 + g);
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < supers; ++sb) {
      const __m512 d = fp16x16(super + sb * 16);
      for (int64_t b = sb * 8; b < sb * 8 + 8; ++b) {
        prefetch_block(qs + b * 4, 4);
        meta_ahead.at(b);
        __m512i v[8];
        unpack_levels(qs + b * 4, levels, v);
        const __m512 scale = _mm512_mul_ps(d, s8x16(meta + b * 16));
        for (int i = 0; i < M; ++i) {
          __m512i dot = byte_dot(v, a.xq + i * a.xq_stride + b * 32);
          dot = remove_offset<128>(dot, a.xs + i * blocks + b);
          acc[i] = add_block(acc[i], dot, scale, a.xd[i * blocks + b]);
        }
      }
    }
    store_group<M>(a, g, acc);
  }
}

template <int M>
struct Q2_K {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { q2_k_groups<M>(a, g0, g1); }
};
template <int M>
struct Q3_K {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { half_scaled_groups<3, M>(a, g0, g1); }
};
template <int M>
struct Q4_K {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { k_groups<false, M>(a, g0, g1); }
};
template <int M>
struct Q5_K {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { k_groups<true, M>(a, g0, g1); }
};
template <int M>
struct Q6_K {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { half_scaled_groups<6, M>(a, g0, g1); }
};
template <int M>
struct IQ4_XS {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { iq4_xs_groups<M>(a, g0, g1); }
};

}  // namespace

void q2_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q2_K>(a, g0, g1); }
void q3_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q3_K>(a, g0, g1); }
void q4_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q4_K>(a, g0, g1); }
void q5_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q5_K>(a, g0, g1); }
void q6_k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q6_K>(a, g0, g1); }
void iq4_xs_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<IQ4_XS>(a, g0, g1); }

}  // namespace tandem::cpu::detail::int8
