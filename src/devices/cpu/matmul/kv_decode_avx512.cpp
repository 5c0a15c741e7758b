// AVX-512 decode attention over an f16 or q8_0 KV cache (kv_products.h): fp32 arithmetic, every
// cached value widened exactly, for the few query rows of one token's heads sharing a KV head.
//
// Why not the matmul kernels: a head's cache rows are short (64 f16 = 128 bytes for most models)
// and a fixed stride apart. The decode matvec (gemv_tile) reduces every query x key product across
// its 16 lanes on its own (a chain of shuffles per score) and prefetches two rows ahead; the row
// sum waits on each row's load. At depth 4096 on TinyLlama both took 15 of a token's 38 ms
// (Emerald Rapids, 2 threads) for 92 MB of cache, ~6 GB/s against 28 available.
//
// Both kernels walk the cache in blocks of 16 rows. A block is widened to fp32 once into an L1
// buffer and used by every query row. The rows four blocks ahead are prefetched: a token-major
// cache's rows are a stride apart, which the hardware streams do not follow, and a head-major
// cache's run is new to them at every head.
//   * Scores: per query row, 16 accumulators (one per key) sum the head's columns, then one
//     transposing reduction turns the 16 vectors into the block's 16 scores, stored as one vector.
//   * Sums: output rows in groups whose accumulators (up to 16 vectors) stay in registers across
//     the block; each probability is broadcast once and multiplies a row's whole head.
#include <algorithm>
#include <utility>

#include "devices/cpu/matmul/kv_products.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {
namespace {

constexpr int64_t kBlockRows = 16;
constexpr int64_t kPrefetchBlocks = 4;  // 64 rows: several DRAM latencies of work ahead
constexpr int64_t kMaxChunks = kKvWideMaxCols / 16;

// Bytes of one head's row: C x 16 columns of f16, or q8_0 blocks of 32 (C even).
template <int C, DType T>
constexpr int64_t kRowDataBytes = T == DType::F16 ? C * 32 : C / 2 * int64_t(sizeof(BlockQ8_0));

// Rows [r0, r0 + n) of the cache (C x 16 columns), widened to fp32 into buf (kBlockRows x C x 16,
// row-major): f16 exactly; q8_0 as its dequantization d * q, exact in fp32 (11 x 8 significant
// bits). The rows kPrefetchBlocks blocks ahead are prefetched. Missing rows are zeros.
template <int C, DType T>
void widen_block(const KvWideArgs& a, int64_t r0, int64_t n, float* buf) {
  const uint8_t* row = a.kv + r0 * a.row_bytes;
  const int64_t ahead = kPrefetchBlocks * kBlockRows * a.row_bytes;
  for (int64_t j = 0; j < n; ++j, row += a.row_bytes) {
    for (int64_t off = 0; off < kRowDataBytes<C, T>; off += 64)
      _mm_prefetch(reinterpret_cast<const char*>(row + ahead + off), _MM_HINT_T0);
    float* out = buf + j * C * 16;
    if constexpr (T == DType::F16) {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(row);
      for (int c = 0; c < C; ++c) _mm512_store_ps(out + c * 16, load_f16(h + c * 16));
    } else {
      const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row);
      for (int c = 0; c < C / 2; ++c) {
        const __m512 d = _mm512_set1_ps(fp16_scale(b[c].d));
        __m512 lo, hi;
        q8_levels(b + c, lo, hi);
        _mm512_store_ps(out + c * 32, _mm512_mul_ps(lo, d));
        _mm512_store_ps(out + c * 32 + 16, _mm512_mul_ps(hi, d));
      }
    }
  }
  for (int64_t j = n; j < kBlockRows; ++j)
    for (int c = 0; c < C; ++c) _mm512_store_ps(buf + j * C * 16 + c * 16, _mm512_setzero_ps());
}

// Lane j of the result = the sum of v[j]'s 16 lanes. Pairs of vectors are interleaved and added
// (within 128-bit lanes, then across them) so 16 sums cost 45 instructions, not 16 reductions --
// the shape of simd_avx512.h's transpose16, but adding at each step halves the vectors, where the
// transpose and 15 adds after it would take 79.
[[gnu::always_inline]] inline __m512 sum_lanes_of_16(const __m512 v[16]) {
  __m512 pairs[8], quads[4];
  for (int p = 0; p < 8; ++p)
    pairs[p] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * p], v[2 * p + 1]), _mm512_unpackhi_ps(v[2 * p], v[2 * p + 1]));
  // Per 128-bit lane: [v0 v1 v0 v1] partials -> [v0 v1 v2 v3] partials.
  for (int q = 0; q < 4; ++q) {
    const __m512d a = _mm512_castps_pd(pairs[2 * q]), b = _mm512_castps_pd(pairs[2 * q + 1]);
    quads[q] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // Across 128-bit lanes: lanes 0+1 and 2+3 of two vectors, then once more; 128-bit lane q of the
  // result holds vectors 4q..4q+3 in order.
  const __m512 h0 =
      _mm512_add_ps(_mm512_shuffle_f32x4(quads[0], quads[1], 0x88), _mm512_shuffle_f32x4(quads[0], quads[1], 0xdd));
  const __m512 h1 =
      _mm512_add_ps(_mm512_shuffle_f32x4(quads[2], quads[3], 0x88), _mm512_shuffle_f32x4(quads[2], quads[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(h0, h1, 0x88), _mm512_shuffle_f32x4(h0, h1, 0xdd));
}

// y[i, r] = q_i . K_r for i < m, r < rows, over heads of C x 16 columns.
template <int C, DType T>
void wide_scores_of(const KvWideArgs& a) {
  alignas(64) float keys[kBlockRows * C * 16];
  for (int64_t r0 = 0; r0 < a.rows; r0 += kBlockRows) {
    const int64_t n = std::min(kBlockRows, a.rows - r0);
    widen_block<C, T>(a, r0, n, keys);
    for (int64_t i = 0; i < a.m; ++i) {
      const float* q = a.a + i * a.lda;
      __m512 acc[kBlockRows];
      for (int j = 0; j < kBlockRows; ++j) acc[j] = _mm512_setzero_ps();
      for (int c = 0; c < C; ++c) {
        const __m512 qc = _mm512_loadu_ps(q + c * 16);
        for (int j = 0; j < kBlockRows; ++j)
          acc[j] = _mm512_fmadd_ps(_mm512_load_ps(keys + (j * C + c) * 16), qc, acc[j]);
      }
      _mm512_mask_storeu_ps(a.y + i * a.ldy + r0, first_lanes(n), sum_lanes_of_16(acc));
    }
  }
}

// y[i, :] += sum over the block's rows of p[i, r] V[r, :], for output rows [i0, i0 + G): G x C
// accumulators (C = cols / 16) live in registers for the block.
template <int C, int G>
void sums_group(const KvWideArgs& a, const float* values, int64_t r0, int64_t n, int64_t i0) {
  __m512 acc[G][C];
  for (int gi = 0; gi < G; ++gi)
    for (int c = 0; c < C; ++c) acc[gi][c] = _mm512_loadu_ps(a.y + (i0 + gi) * a.ldy + c * 16);
  const float* p = a.a + i0 * a.lda + r0;
  for (int64_t j = 0; j < n; ++j) {
    __m512 v[C];
    for (int c = 0; c < C; ++c) v[c] = _mm512_load_ps(values + j * C * 16 + c * 16);
    for (int gi = 0; gi < G; ++gi) {
      const __m512 pj = _mm512_set1_ps(p[gi * a.lda + j]);
      for (int c = 0; c < C; ++c) acc[gi][c] = _mm512_fmadd_ps(pj, v[c], acc[gi][c]);
    }
  }
  for (int gi = 0; gi < G; ++gi)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(a.y + (i0 + gi) * a.ldy + c * 16, acc[gi][c]);
}

template <int C, DType T>
void wide_sums_of(const KvWideArgs& a) {
  constexpr int G = C >= 16 ? 1 : 16 / C;  // output rows per group: at most 16 accumulators
  alignas(64) float values[kBlockRows * C * 16];
  for (int64_t r0 = 0; r0 < a.rows; r0 += kBlockRows) {
    const int64_t n = std::min(kBlockRows, a.rows - r0);
    widen_block<C, T>(a, r0, n, values);
    int64_t i = 0;
    for (; i + G <= a.m; i += G) sums_group<C, G>(a, values, r0, n, i);
    for (; i < a.m; ++i) sums_group<C, 1>(a, values, r0, n, i);
  }
}

// One instance per cache type and head width in 16-column chunks (1..16: kKvWideMaxCols = 256;
// q8_0 heads are whole blocks of 32, so only its even widths are ever called).
template <template <int, DType> class F, int... C>
void by_type_and_chunks(const KvWideArgs& a, std::integer_sequence<int, C...>) {
  static constexpr void (*f16[])(const KvWideArgs&) = {F<C + 1, DType::F16>::run...};
  static constexpr void (*q8[])(const KvWideArgs&) = {F<C + 1, DType::Q8_0>::run...};
  (a.type == DType::F16 ? f16 : q8)[a.cols / 16 - 1](a);
}
template <int C, DType T>
struct Scores {
  static void run(const KvWideArgs& a) { wide_scores_of<C, T>(a); }
};
template <int C, DType T>
struct Sums {
  static void run(const KvWideArgs& a) { wide_sums_of<C, T>(a); }
};
void wide_scores(const KvWideArgs& a) { by_type_and_chunks<Scores>(a, std::make_integer_sequence<int, kMaxChunks>()); }
void wide_sums(const KvWideArgs& a) { by_type_and_chunks<Sums>(a, std::make_integer_sequence<int, kMaxChunks>()); }

}  // namespace

extern const KvWideKernels kAvx512WideKv;
const KvWideKernels kAvx512WideKv = {wide_scores, wide_sums};

}  // namespace tandem::cpu::detail
