// AVX-512 VNNI decode kernels on packed Q4_0 / Q8_0 weights (packed_weight.h) with int8
// activations: the path that lets decode run at memory speed rather than instruction speed.
//
// Per group of 16 rows and 32-column block, the integer dot products of all 16 rows come out of
// vpdpbusd as the 16 dword lanes of one register (each lane sums four u8 x s8 products). Then one
// conversion to fp32 and one FMA with (16 weight scales) x (the activation block's scale) add the
// block to the 16 rows' sums. The weight offsets (+8 for Q4_0's nibbles, +128 for Q8_0's XOR) are
// removed with the activation block's precomputed sum: sum (w + c) x = sum w x + c sum x.
//
// Q4_0 needs no shift for its high nibbles: (byte & 0xF0) is 16 x the nibble, so the high half's
// dot product is summed separately and divided by 16 exactly (an arithmetic shift of a multiple
// of 16).
#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/packed_weight.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {
namespace {

// Software prefetch distance into a group's stream: a group is one sequential run (16-18 KB for
// 2048 columns), yet the hardware prefetchers alone let one core reach only ~half the memory's
// read bandwidth on it; 4 KB ahead (measured 2-8 KB with matmul_bench; 4 KB best) covers the
// DRAM latency at full rate.
constexpr int kPrefetchBytes = 4096;

inline void prefetch_block(const __m512i* p, int lines) {
  for (int j = 0; j < lines; ++j) _mm_prefetch(reinterpret_cast<const char*>(p + j) + kPrefetchBytes, _MM_HINT_T0);
}

inline __m512i bcast(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// m rows of activations -> int8 per 32 columns. cols is a multiple of 32 (Q4_0 / Q8_0 rows).
// A block holding a NaN or infinity gets a NaN scale, so the rows it feeds come out NaN as the
// fp32 path's would.
void quantize_rows(const float* x, int64_t ldx, int64_t m, int64_t cols, int8_t* q, float* d, int32_t* sums,
                   int32_t* sums_lo) {
  const int64_t blocks = cols / 32;
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * ldx;
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512 v0 = _mm512_loadu_ps(xi + b * 32), v1 = _mm512_loadu_ps(xi + b * 32 + 16);
      const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
      // Checked on both halves before the max, which drops NaNs.
      const __m512 big = _mm512_set1_ps(3.4e38f);
      const bool finite = (_mm512_cmp_ps_mask(a0, big, _CMP_LE_OQ) & _mm512_cmp_ps_mask(a1, big, _CMP_LE_OQ)) == 0xffff;
      const float scale = amax / 127.0f;
      const __m512 inv = _mm512_set1_ps(scale > 0 && finite ? 127.0f / amax : 0.0f);
      // Rounds to nearest even (the default MXCSR mode); |q| <= 127 so the narrowing is exact.
      // A non-finite block's quants are zeroed (NaN * 0 would convert to INT_MIN, and its sum would
      // overflow); its NaN scale alone carries the poison to the output.
      const __m512i q0 = finite ? _mm512_cvtps_epi32(_mm512_mul_ps(v0, inv)) : _mm512_setzero_si512();
      const __m512i q1 = finite ? _mm512_cvtps_epi32(_mm512_mul_ps(v1, inv)) : _mm512_setzero_si512();
      int8_t* qb = q + i * cols + b * 32;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qb), _mm512_cvtepi32_epi8(q0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + 16), _mm512_cvtepi32_epi8(q1));
      sums[i * blocks + b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
      sums_lo[i * blocks + b] = _mm512_reduce_add_epi32(q0);
      d[i * blocks + b] = finite ? scale : __builtin_nanf("");
    }
  }
}

// acc += (the block's 16 integer dot products) x (16 weight scales) x (the activation scale).
inline __m512 add_block(__m512 acc, __m512i dot, __m512 weight_scales, float x_scale) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(weight_scales, _mm512_set1_ps(x_scale)), acc);
}

// The 16 rows' integer dot products of one 32-column block of nibbles with 32 int8 activations:
// l* hold the low nibbles (elements 0..15), h* the high ones as 16 x nibble (16..31), so the
// high half's sum is divided by 16 exactly. Shared by Q4_0 and Q4_K (which differ in scaling).
inline __m512i nibble_dot(__m512i l0, __m512i l1, __m512i l2, __m512i l3, __m512i h0, __m512i h1, __m512i h2,
                          __m512i h3, const int8_t* xq) {
  __m512i lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), l0, bcast(xq));
  __m512i hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), h0, bcast(xq + 16));
  lo = _mm512_dpbusd_epi32(lo, l1, bcast(xq + 4));
  hi = _mm512_dpbusd_epi32(hi, h1, bcast(xq + 20));
  lo = _mm512_dpbusd_epi32(lo, l2, bcast(xq + 8));
  hi = _mm512_dpbusd_epi32(hi, h2, bcast(xq + 24));
  lo = _mm512_dpbusd_epi32(lo, l3, bcast(xq + 12));
  hi = _mm512_dpbusd_epi32(hi, h3, bcast(xq + 28));
  return _mm512_add_epi32(lo, _mm512_srai_epi32(hi, 4));
}

// Writes group g's 16 sums of each activation row (lanes past the view's rows are not written).
template <int M>
void store_group(const PackedGemvArgs& a, int64_t g, const __m512 (&acc)[M]) {
  const __mmask16 valid = first_lanes(a.rows - g * PackedWeight::kRows);
  for (int i = 0; i < M; ++i) _mm512_mask_storeu_ps(a.y + i * a.ldy + g * PackedWeight::kRows, valid, acc[i]);
}

// Q4_0: four qs dwords per row and block.
template <int M>
void q4_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks;
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(char(0xF0));
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const __m256i* sc = reinterpret_cast<const __m256i*>(w.scales(a.group0 + g));
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      prefetch_block(qs + b * 4, 4);
      const __m512i w0 = _mm512_load_si512(qs + b * 4), w1 = _mm512_load_si512(qs + b * 4 + 1);
      const __m512i w2 = _mm512_load_si512(qs + b * 4 + 2), w3 = _mm512_load_si512(qs + b * 4 + 3);
      const __m512i l0 = _mm512_and_si512(w0, lo_mask), l1 = _mm512_and_si512(w1, lo_mask);
      const __m512i l2 = _mm512_and_si512(w2, lo_mask), l3 = _mm512_and_si512(w3, lo_mask);
      const __m512i h0 = _mm512_and_si512(w0, hi_mask), h1 = _mm512_and_si512(w1, hi_mask);
      const __m512i h2 = _mm512_and_si512(w2, hi_mask), h3 = _mm512_and_si512(w3, hi_mask);
      const __m512 sw = _mm512_cvtph_ps(_mm256_load_si256(sc + b));
      for (int i = 0; i < M; ++i) {
        const int8_t* xq = a.xq + i * a.xq_stride + b * 32;
        __m512i dot = nibble_dot(l0, l1, l2, l3, h0, h1, h2, h3, xq);
        dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(8 * a.xs[i * blocks + b]));
        acc[i] = add_block(acc[i], dot, sw, a.xd[i * blocks + b]);
      }
    }
    store_group<M>(a, g, acc);
  }
}

// Q8_0: eight qs dwords per row and block (bytes XOR 0x80).
template <int M>
void q8_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const __m256i* sc = reinterpret_cast<const __m256i*>(w.scales(a.group0 + g));
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      prefetch_block(qs + b * 8, 8);
      __m512i wq[8];
      for (int j = 0; j < 8; ++j) wq[j] = _mm512_load_si512(qs + b * 8 + j);
      const __m512 sw = _mm512_cvtph_ps(_mm256_load_si256(sc + b));
      for (int i = 0; i < M; ++i) {
        const int8_t* xq = a.xq + i * a.xq_stride + b * 32;
        __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[0], bcast(xq));
        __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[4], bcast(xq + 16));
        s0 = _mm512_dpbusd_epi32(s0, wq[1], bcast(xq + 4));
        s1 = _mm512_dpbusd_epi32(s1, wq[5], bcast(xq + 20));
        s0 = _mm512_dpbusd_epi32(s0, wq[2], bcast(xq + 8));
        s1 = _mm512_dpbusd_epi32(s1, wq[6], bcast(xq + 24));
        s0 = _mm512_dpbusd_epi32(s0, wq[3], bcast(xq + 12));
        s1 = _mm512_dpbusd_epi32(s1, wq[7], bcast(xq + 28));
        const __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), _mm512_set1_epi32(128 * a.xs[i * blocks + b]));
        acc[i] = add_block(acc[i], dot, sw, a.xd[i * blocks + b]);
      }
    }
    store_group<M>(a, g, acc);
  }
}

// Q4_K: each 32-column sub-block as a Q4_0 block without the +8 offset; the weight is
// d * sc * q - dmin * m, so with x = xd * xq the block adds xd * ((d sc) dot(q, xq) - (dmin m) sum(xq)).
// d sc and dmin m are formed in fp32 per sub-block, as ggml's dequantization forms them.
template <int M>
void q4k_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks, supers = blocks / 8;
  const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8(char(0xF0));
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const __m128i* meta = reinterpret_cast<const __m128i*>(w.k_scales_mins(a.group0 + g));
    const __m256i* super = reinterpret_cast<const __m256i*>(w.k_super(a.group0 + g));
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < supers; ++sb) {
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(super + sb));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(super + supers + sb));
      for (int64_t b = sb * 8; b < sb * 8 + 8; ++b) {
        prefetch_block(qs + b * 4, 4);
        const __m512i w0 = _mm512_load_si512(qs + b * 4), w1 = _mm512_load_si512(qs + b * 4 + 1);
        const __m512i w2 = _mm512_load_si512(qs + b * 4 + 2), w3 = _mm512_load_si512(qs + b * 4 + 3);
        const __m512i l0 = _mm512_and_si512(w0, lo_mask), l1 = _mm512_and_si512(w1, lo_mask);
        const __m512i l2 = _mm512_and_si512(w2, lo_mask), l3 = _mm512_and_si512(w3, lo_mask);
        const __m512i h0 = _mm512_and_si512(w0, hi_mask), h1 = _mm512_and_si512(w1, hi_mask);
        const __m512i h2 = _mm512_and_si512(w2, hi_mask), h3 = _mm512_and_si512(w3, hi_mask);
        const __m512 scale = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(meta + 2 * b))));
        const __m512 min = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(meta + 2 * b + 1))));
        for (int i = 0; i < M; ++i) {
          const int8_t* xq = a.xq + i * a.xq_stride + b * 32;
          const __m512i dot = nibble_dot(l0, l1, l2, l3, h0, h1, h2, h3, xq);
          // (d sc) dot - (dmin m) sum(xq), then times the activation block's scale.
          const __m512 t = _mm512_fmsub_ps(_mm512_cvtepi32_ps(dot), scale,
                                           _mm512_mul_ps(min, _mm512_set1_ps(float(a.xs[i * blocks + b]))));
          acc[i] = _mm512_fmadd_ps(t, _mm512_set1_ps(a.xd[i * blocks + b]), acc[i]);
        }
      }
    }
    store_group<M>(a, g, acc);
  }
}

// Q6_K: each 32-column block as a Q8_0 block of (q - 32) XOR 0x80 bytes, whose two halves have
// their own int8 scales: the block adds xd d (sc0 (dot0 - 128 sum_lo) + sc1 (dot1 - 128 sum_hi)).
template <int M>
void q6k_groups(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end) {
  const PackedWeight& w = *a.w;
  const int64_t blocks = w.blocks, supers = blocks / 8;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const __m512i* qs = reinterpret_cast<const __m512i*>(w.qs(a.group0 + g));
    const __m128i* meta = reinterpret_cast<const __m128i*>(w.k_scales_mins(a.group0 + g));
    const __m256i* super = reinterpret_cast<const __m256i*>(w.k_super(a.group0 + g));
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < supers; ++sb) {
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(super + sb));
      for (int64_t b = sb * 8; b < sb * 8 + 8; ++b) {
        prefetch_block(qs + b * 8, 8);
        __m512i wq[8];
        for (int j = 0; j < 8; ++j) wq[j] = _mm512_load_si512(qs + b * 8 + j);
        const __m512 sc0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(meta + 2 * b)));
        const __m512 sc1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(meta + 2 * b + 1)));
        for (int i = 0; i < M; ++i) {
          const int8_t* xq = a.xq + i * a.xq_stride + b * 32;
          __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[0], bcast(xq));
          __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[4], bcast(xq + 16));
          s0 = _mm512_dpbusd_epi32(s0, wq[1], bcast(xq + 4));
          s1 = _mm512_dpbusd_epi32(s1, wq[5], bcast(xq + 20));
          s0 = _mm512_dpbusd_epi32(s0, wq[2], bcast(xq + 8));
          s1 = _mm512_dpbusd_epi32(s1, wq[6], bcast(xq + 24));
          s0 = _mm512_dpbusd_epi32(s0, wq[3], bcast(xq + 12));
          s1 = _mm512_dpbusd_epi32(s1, wq[7], bcast(xq + 28));
          const int32_t lo = a.xs_lo[i * blocks + b], hi = a.xs[i * blocks + b] - lo;
          s0 = _mm512_sub_epi32(s0, _mm512_set1_epi32(128 * lo));
          s1 = _mm512_sub_epi32(s1, _mm512_set1_epi32(128 * hi));
          const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), sc1, _mm512_mul_ps(_mm512_cvtepi32_ps(s0), sc0));
          acc[i] = _mm512_fmadd_ps(t, _mm512_mul_ps(d, _mm512_set1_ps(a.xd[i * blocks + b])), acc[i]);
        }
      }
    }
    store_group<M>(a, g, acc);
  }
}

template <int M>
struct Q6K {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { q6k_groups<M>(a, g0, g1); }
};

template <int M>
struct Q4K {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { q4k_groups<M>(a, g0, g1); }
};

template <int M>
struct Q4 {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { q4_groups<M>(a, g0, g1); }
};
template <int M>
struct Q8 {
  static void run(const PackedGemvArgs& a, int64_t g0, int64_t g1) { q8_groups<M>(a, g0, g1); }
};

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

void q4_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q4>(a, g0, g1); }
void q8_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q8>(a, g0, g1); }
void q4k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q4K>(a, g0, g1); }
void q6k_gemv(const PackedGemvArgs& a, int64_t g0, int64_t g1) { dispatch_m<Q6K>(a, g0, g1); }

}  // namespace

extern const PackedDecodeKernels kAvx512VnniPacked;
const PackedDecodeKernels kAvx512VnniPacked = {quantize_rows, q4_gemv, q8_gemv, q4k_gemv, q6k_gemv};

}  // namespace tandem::cpu::detail
