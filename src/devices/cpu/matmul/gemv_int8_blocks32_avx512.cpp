// AVX-512 VNNI decode kernels on packed weights of the types with one scale per 32 columns:
// Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, IQ4_NL (layouts in packed_weight.h).
//
// Per group of 16 rows and 32-column block, the integer dot products of all 16 rows come out of
// vpdpbusd as the 16 dword lanes of one register. Then one conversion to fp32 and one FMA with
// (16 weight scales) x (the activation block's scale) add the block to the 16 rows' sums. Weight
// offsets (+8 for Q4_0's nibbles, +16 for Q5_0's, +128 for Q8_0's XOR and IQ4's levels) are
// removed with the activation block's precomputed sum: sum (w + c) x = sum w x + c sum x; the
// minimum of Q4_1 / Q5_1 (value d q + m) is added the same way: sum (d q + m) x = d dot + m sum x.
#include "devices/cpu/matmul/int8_blocks_avx512.h"
#include "core/quant.h"

namespace tandem::cpu::detail::int8 {
namespace {

// How each type turns a block's packed bytes into dword vectors and its integer dot product.
struct Nibbles {  // Q4_0, Q4_1: the high nibbles kept as 16 x nibble (see nibble_dot)
  static constexpr int kLines = 4;
  struct W {
    __m512i l[4], h[4];
  };
  static W load(const __m512i* qs, __m512i) {
    W w;
    split_nibbles(qs, w.l, w.h);
    return w;
  }
  static __m512i dot(const W& w, const int8_t* xq) { return nibble_dot(w.l, w.h, xq); }
};
struct Bytes {  // Q8_0: bytes as packed
  static constexpr int kLines = 8;
  struct W {
    __m512i v[8];
  };
  static W load(const __m512i* qs, __m512i) {
    W w;
    for (int j = 0; j < 8; ++j) w.v[j] = _mm512_load_si512(qs + j);
    return w;
  }
  static __m512i dot(const W& w, const int8_t* xq) { return byte_dot(w.v, xq); }
};
struct FiveBits {  // Q5_0, Q5_1
  static constexpr int kLines = 5;
  struct W {
    __m512i v[8];
  };
  static W load(const __m512i* qs, __m512i) {
    W w;
    unpack_five_bits(qs, w.v);
    return w;
  }
  static __m512i dot(const W& w, const int8_t* xq) { return byte_dot(w.v, xq); }
};
struct Levels {  // IQ4_NL
  static constexpr int kLines = 4;
  struct W {
    __m512i v[8];
  };
  static W load(const __m512i* qs, __m512i levels) {
    W w;
    unpack_levels(qs, levels, w.v);
    return w;
  }
  static __m512i dot(const W& w, const int8_t* xq) { return byte_dot(w.v, xq); }
};

// Scaling: value = d (q - kOffset), or d q + m when kMinimum.
template <class Q, int kOffset, bool kMinimum, int M>
void groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks;
  const size_t meta_step = w.meta_bytes_per_block;
  // IQ4_NL's levels + 128 in every 128-bit lane (vpshufb looks up within a lane).
  const __m512i levels = iq4_levels_plus_128();
  if (g_begin < g_end) prefetch_run_start(w.qs(a.group0 + g_begin));
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const uint8_t* mb = w.block_meta(a.group0 + g);
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    const MetaPrefetch meta_ahead(w, a.group0 + g, g == g_begin);
    for (int64_t b = 0; b < blocks; ++b, qs += Q::kLines, mb += meta_step) {
      prefetch_block(qs, Q::kLines);
      meta_ahead.at(b);
      const typename Q::W wq = Q::load(qs, levels);
      const __m512 d = fp16x16(mb);
      if constexpr (kMinimum) {
        const __m512 m = fp16x16(mb + 32);
        for (int i = 0; i < M; ++i) {
          const __m512i dot = Q::dot(wq, a.xq + i * a.xq_stride + b * 32);
          const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), d, _mm512_mul_ps(m, _mm512_set1_ps(float(a.xs[i * blocks + b]))));
          acc[i] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.xd[i * blocks + b]), acc[i]);
        }
      } else {
        for (int i = 0; i < M; ++i) {
          const __m512i raw = Q::dot(wq, a.xq + i * a.xq_stride + b * 32);
          const __m512i dot = remove_offset<kOffset>(raw, a.xs + i * blocks + b);
          acc[i] = add_block(acc[i], dot, d, a.xd[i * blocks + b]);
        }
      }
    }
    store_group<M>(a, g, acc);
  }
}

template <int M>
struct Q4_0 {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { groups<Nibbles, 8, false, M>(a, g0, g1); }
};
template <int M>
struct Q8_0 {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { groups<Bytes, 128, false, M>(a, g0, g1); }
};
template <int M>
struct Q4_1 {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { groups<Nibbles, 0, true, M>(a, g0, g1); }
};
template <int M>
struct Q5_0 {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { groups<FiveBits, 16, false, M>(a, g0, g1); }
};
template <int M>
struct Q5_1 {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { groups<FiveBits, 0, true, M>(a, g0, g1); }
};
template <int M>
struct IQ4_NL {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { groups<Levels, 128, false, M>(a, g0, g1); }
};

}  // namespace

void q4_0_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q4_0>(a, g0, g1); }
void q8_0_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q8_0>(a, g0, g1); }
void q4_1_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q4_1>(a, g0, g1); }
void q5_0_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q5_0>(a, g0, g1); }
void q5_1_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q5_1>(a, g0, g1); }
void iq4_nl_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<IQ4_NL>(a, g0, g1); }

}  // namespace tandem::cpu::detail::int8
