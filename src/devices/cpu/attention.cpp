#include "devices/cpu/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "devices/cpu/matmul/kv_products.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/ops.h"

namespace tandem::cpu {
namespace {

// A view of f32 rows inside a cache, used as the "weight" of a matmul.
WeightView f32_rows(const float* data, int64_t rows, int64_t cols, int64_t stride) {
  return WeightView{DType::F32, data, rows, cols, size_t(stride) * sizeof(float)};
}

// The first key the query at position pos sees: 0, or the start of its sliding window.
int64_t window_start(const AttentionScores& how, int64_t pos) {
  return how.window > 0 ? std::max<int64_t>(0, pos + 1 - how.window) : 0;
}

// A row of len scores whose keys [lo, hi) are visible: the others weigh 0; the visible ones are
// scaled, soft-capped and exponentiated (the softmax's parts, before its division).
SoftmaxParts masked_softmax_parts(float* row, int64_t lo, int64_t hi, int64_t len, float scale,
                                  const AttentionScores& how) {
  std::fill(row, row + lo, 0.0f);
  scale_inplace(row + lo, hi - lo, scale);
  if (how.softcap > 0) softcap_inplace(row + lo, hi - lo, how.softcap);
  return softmax_parts(row + lo, hi - lo, len - lo);
}

// The causal mask, scale, softcap and softmax of query row i's scores over n_kv keys. Positions
// count from the row's first key: a caller whose keys start at position s passes n_past - s (below
// 0 for a chunk's later rows when s is past n_past).
void normalize_scores(float* row, int i, int n_past, int n_kv, float scale, const AttentionScores& how) {
  // Causal: query i sees keys up to n_past + i, and with a window only the last `window` of them.
  const int64_t visible = n_past + i + 1, first = window_start(how, n_past + i);
  const float inv = 1.0f / masked_softmax_parts(row, first, visible, n_kv, scale, how).sum;
  for (int64_t j = first; j < visible; ++j) row[j] *= inv;
}

}  // namespace

void attention(ThreadPool& pool, const float* q, int64_t ldq, const float* k_cache, const float* v_cache,
               float* out, int64_t ldo, int n, int n_heads, int n_kv_heads, int head_dim, int context,
               int n_past, const AttentionScores& how, float* scratch, int64_t scratch_stride) {
  const int hd = head_dim, kv_dim = n_kv_heads * head_dim;
  const int group = n_heads / n_kv_heads;  // query heads sharing one KV head
  const int n_kv = n_past + n;             // keys visible to the last query
  const float scale = how.scale != 0 ? how.scale : 1.0f / std::sqrt(float(hd));
  // Threads take whole heads; inside a head the two products run single-threaded.
  pool.run([&](int ith, int nth) {
    ThreadPool inline_pool(1);
    float* scores = scratch + int64_t(ith) * scratch_stride;
    for (int h = ith; h < n_heads; h += nth) {
      const int kvh = h / group;
      // scores[i, j] = q_i . k_j  for the n queries against the n_kv cached keys
      matmul(inline_pool, f32_rows(k_cache + kvh * hd, n_kv, hd, kv_dim), q + h * hd, n, ldq, scores, n_kv);
      for (int i = 0; i < n; ++i) normalize_scores(scores + int64_t(i) * n_kv, i, n_past, n_kv, scale, how);
      // out_i = sum_j p[i, j] v_j, with v transposed so each output dim is a row over positions
      matmul(inline_pool, f32_rows(v_cache + int64_t(kvh) * hd * context, hd, n_kv, context), scores, n, n_kv,
             out + h * hd, ldo);
    }
  });
}

namespace {

// Per-thread buffers of the typed-cache attention, grown on demand and kept.
struct PagesScratch {
  std::vector<float> queries, scores, out, values_t, rows;
  std::vector<uint16_t> values_t16, rows16;
};
PagesScratch& pages_scratch() {
  thread_local PagesScratch s;
  return s;
}

// The group of query heads sharing KV head kvh, rows [r0, r1) of q, as (r1 - r0) x group rows of
// hd, head-major: row gi * (r1 - r0) + (i - r0).
void gather_queries(const float* q, int64_t ldq, int kvh, int group, int hd, int r0, int r1, float* qg) {
  for (int gi = 0; gi < group; ++gi)
    for (int i = r0; i < r1; ++i)
      std::memcpy(qg + (int64_t(gi) * (r1 - r0) + i - r0) * hd, q + i * ldq + (kvh * group + gi) * hd,
                  size_t(hd) * sizeof(float));
}
template <class T>
T* grown(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Scores held per pass (floats, 8 MiB): long chunks run in passes of fewer query rows.
constexpr int64_t kScoreBudget = int64_t(1) << 21;
// Rows of probabilities up to which values are summed straight from the cache (weighted_row_sum,
// which decodes each value row once per call); beyond, the values are transposed once (see
// transpose_values) and the product is a GEMM.
constexpr int64_t kRowSumMaxRows = 16;

// Value row j of the head as the transposition keeps it: dequantized to fp32, or an f16 cache's
// f16 bits as they are.
void load_value_row(const WeightView& values, int64_t j, float* out) { dequantize_row(values, j, out); }
void load_value_row(const WeightView& values, int64_t j, uint16_t* out) {
  std::memcpy(out, static_cast<const char*>(values.data) + size_t(j) * values.row_bytes,
              size_t(values.cols) * sizeof(uint16_t));
}

// vt[d * ld + j] = value j's element d, for j < n_kv: one head's values, transposed. T = float
// for any cache type; T = uint16_t keeps an f16 cache's f16 bits, so the product is a GEMM of F16
// weights, which takes the AMX tiles (or the bf16 GEMM) where kFastest takes them for F16 weights,
// as the keys' product does -- in fp32 it was a sixth of a 512-token prompt's time at depth 2048
// (Emerald Rapids). The values are exact in f16, so only the probabilities are rounded (to bf16,
// as the queries are for the keys' product and every prompt activation for F16 weights).
template <class T>
void transpose_values(const WeightView& values, int64_t n_kv, T* vt, int64_t ld, std::vector<T>& rows) {
  constexpr int64_t kTile = 16;  // rows per tile: each d writes 16 contiguous elements
  const int64_t hd = values.cols;
  T* tile = grown(rows, size_t(kTile * hd));
  for (int64_t j0 = 0; j0 < n_kv; j0 += kTile) {
    const int64_t nt = std::min(kTile, n_kv - j0);
    for (int64_t j = 0; j < nt; ++j) load_value_row(values, j0 + j, tile + j * hd);
    for (int64_t d = 0; d < hd; ++d)
      for (int64_t j = 0; j < nt; ++j) vt[d * ld + j0 + j] = tile[j * hd + d];
  }
}

// Decode over a long cache with fewer (KV head, query rows) units than threads -- one KV head
// (Gemma 3 1B), two (Qwen2.5 0.5B/1.5B), four on an eight-core phone -- would leave threads idle
// while one reads a whole head's cache. Each unit's keys are then split into segments, a unit of
// work each: a segment's scores, their softmax parts (max and sum of exps) and its unnormalized
// value sums, merged once every segment is done (the softmax of the whole row, rescaled by
// exp(max_s - max)). No segment is shorter than this many keys.
constexpr int64_t kMinSegmentKeys = 256;

// Where a unit whose first query sits at position pos starts reading keys: its window's start,
// rounded down to a 16-row block of the decode kernels (0 without a window).
int64_t unit_key_start(const AttentionScores& how, int64_t pos) { return window_start(how, pos) & ~int64_t(15); }

// Key segments per unit: enough for two units a thread, each at least kMinSegmentKeys long; 1 (the
// unsplit path) on one thread, and for units of more query rows than the row-sum products take.
int key_segments(int threads, int units, int64_t unit_rows, int64_t n_kv) {
  if (threads == 1 || unit_rows > kRowSumMaxRows || units >= 2 * threads) return 1;
  const int64_t want = (2 * threads + units - 1) / units;
  return int(std::clamp<int64_t>(std::min(want, n_kv / kMinSegmentKeys), 1, 64));
}

// One segment's results, per query row of its unit: the max and sum of its exps, and its value
// sums (hd floats) weighted by exps relative to that max.
struct SegmentParts {
  std::vector<float> max, sum, out;
};

void attention_split_keys(ThreadPool& pool, const float* q, int64_t ldq, const KvGeometry& g, const uint8_t* k_pages,
                          const uint8_t* v_pages, float* out, int64_t ldo, int n, int n_heads, int n_past,
                          const AttentionScores& how, int chunks, int segments) {
  const int hd = int(g.head_dim), kv_heads = int(g.heads);
  const int group = n_heads / kv_heads;
  const float scale = how.scale != 0 ? how.scale : 1.0f / std::sqrt(float(hd));
  const KvGeometry gv = g.values();
  const int rows_per_chunk = (n + chunks - 1) / chunks;
  const int units = kv_heads * chunks * segments;
  // Kept between calls (a decode step calls this once a layer); the workers fill it through this
  // reference, not the name, which in their threads would be their own thread_local.
  thread_local std::vector<SegmentParts> kept;
  if (kept.size() < size_t(units)) kept.resize(size_t(units));
  std::vector<SegmentParts>& parts = kept;
  std::atomic<int> next{0};
  pool.run([&](int, int) {
    PagesScratch& s = pages_scratch();
    ThreadPool inline_pool(1);
    for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      const int seg = u % segments, kvh = (u / segments) % kv_heads, chunk = u / (segments * kv_heads);
      const int c0 = chunk * rows_per_chunk, c1 = std::min(n, c0 + rows_per_chunk);
      if (c0 >= c1) continue;
      const int rows = c1 - c0;
      const int64_t m = int64_t(rows) * group, unit_kv = n_past + c1;
      // The unit's keys start where its first query's window does (a sliding-window layer reads
      // only the window); the segment's are [k0, k1), each starting on a 16-row block of the
      // decode kernels.
      const int64_t start = unit_key_start(how, n_past + c0), span = unit_kv - start;
      const int64_t k0 = start + ((span * seg / segments) & ~int64_t(15));
      const int64_t k1 = seg + 1 == segments ? unit_kv : start + ((span * (seg + 1) / segments) & ~int64_t(15));
      const int64_t len = k1 - k0;
      SegmentParts& part = parts[size_t(u)];
      part.max.assign(size_t(m), -INFINITY);
      part.sum.assign(size_t(m), 0.0f);
      part.out.assign(size_t(m * hd), 0.0f);
      if (len <= 0) continue;
      float* qg = grown(s.queries, size_t(m * hd));
      gather_queries(q, ldq, kvh, group, hd, c0, c1, qg);
      const size_t key_stride = size_t(g.token_stride_bytes()), value_stride = size_t(gv.token_stride_bytes());
      const uint8_t* keys = k_pages + kv_offset(g, 0, uint32_t(kvh)) + size_t(k0) * key_stride;
      const uint8_t* values = v_pages + kv_offset(gv, 0, uint32_t(kvh)) + size_t(k0) * value_stride;
      float* sc = grown(s.scores, size_t(m * len));
      key_scores(inline_pool, WeightView{g.type, keys, len, hd, key_stride}, qg, m, hd, sc, len);
      for (int gi = 0; gi < group; ++gi)
        for (int i = c0; i < c1; ++i) {
          const int64_t r = int64_t(gi) * rows + i - c0;
          // The keys query i sees ([first, visible) as in normalize_scores), within the segment.
          const int64_t visible = n_past + i + 1, first = window_start(how, n_past + i);
          const int64_t lo = std::clamp<int64_t>(first - k0, 0, len), hi = std::clamp<int64_t>(visible - k0, lo, len);
          const SoftmaxParts p = masked_softmax_parts(sc + r * len, lo, hi, len, scale, how);
          part.max[size_t(r)] = p.max;
          part.sum[size_t(r)] = p.sum;
        }
      value_sums(WeightView{gv.type, values, len, hd, value_stride}, sc, m, len, part.out.data(), hd);
    }
  });
  // The merge: per query row, the whole row's max over the segments, each segment's sums rescaled
  // to it, and one division by the rescaled total of the exps.
  for (int kvh = 0; kvh < kv_heads; ++kvh)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const int c0 = chunk * rows_per_chunk, c1 = std::min(n, c0 + rows_per_chunk);
      const int u0 = (chunk * kv_heads + kvh) * segments;  // the unit's first segment
      for (int gi = 0; gi < group; ++gi)
        for (int i = c0; i < c1; ++i) {
          const size_t r = size_t(gi) * size_t(c1 - c0) + size_t(i - c0);
          float mx = -INFINITY;
          for (int seg = 0; seg < segments; ++seg) mx = std::max(mx, parts[size_t(u0 + seg)].max[r]);
          float total = 0.0f;
          float* o = out + i * ldo + (kvh * group + gi) * hd;
          std::fill(o, o + hd, 0.0f);
          for (int seg = 0; seg < segments; ++seg) {
            const SegmentParts& part = parts[size_t(u0 + seg)];
            if (part.sum[r] == 0.0f) continue;  // no key of the segment visible to this row
            const float w = std::exp(part.max[r] - mx);
            total += w * part.sum[r];
            for (int d = 0; d < hd; ++d) o[d] += w * part.out[r * size_t(hd) + size_t(d)];
          }
          const float inv = 1.0f / total;
          for (int d = 0; d < hd; ++d) o[d] *= inv;
        }
    }
}

}  // namespace

void attention_pages(ThreadPool& pool, const float* q, int64_t ldq, const KvGeometry& g, const uint8_t* k_pages,
                     const uint8_t* v_pages, float* out, int64_t ldo, int n, int n_heads, int n_past,
                     const AttentionScores& how) {
  const int hd = int(g.head_dim), kv_heads = int(g.heads);
  const int group = n_heads / kv_heads;  // query heads sharing one KV head
  const float scale = how.scale != 0 ? how.scale : 1.0f / std::sqrt(float(hd));
  const KvGeometry gv = g.values();
  // Units of work: a KV head x a range of query rows, at least two per thread where rows allow.
  const int chunks = std::clamp((2 * pool.size() + kv_heads - 1) / kv_heads, 1, n);
  const int rows_per_chunk = (n + chunks - 1) / chunks;
  const int units = kv_heads * chunks;
  // The keys a unit reads: all of them, or a sliding window and the unit's rows.
  const int64_t span =
      how.window > 0 ? std::min<int64_t>(n_past + n, int64_t(how.window) + rows_per_chunk) : n_past + n;
  const int segments = key_segments(pool.size(), units, int64_t(rows_per_chunk) * group, span);
  if (segments > 1)
    return attention_split_keys(pool, q, ldq, g, k_pages, v_pages, out, ldo, n, n_heads, n_past, how, chunks, segments);
  std::atomic<int> next{0};
  pool.run([&](int, int) {
    PagesScratch& s = pages_scratch();
    ThreadPool inline_pool(1);
    for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      const int kvh = u % kv_heads, c0 = (u / kv_heads) * rows_per_chunk, c1 = std::min(n, c0 + rows_per_chunk);
      if (c0 >= c1) continue;
      // The unit's keys start where its first query's window does (0 without a window): a
      // sliding-window layer reads only the keys its queries see. Positions below are relative
      // to start.
      const int64_t start = unit_key_start(how, n_past + c0);
      const int64_t unit_kv = n_past + c1 - start;  // keys the unit's last query sees
      const size_t key_stride = size_t(g.token_stride_bytes()), value_stride = size_t(gv.token_stride_bytes());
      const uint8_t* keys = k_pages + kv_offset(g, 0, uint32_t(kvh)) + size_t(start) * key_stride;
      const WeightView values{gv.type, v_pages + kv_offset(gv, 0, uint32_t(kvh)) + size_t(start) * value_stride,
                              unit_kv, hd, value_stride};
      const bool gemm_values = int64_t(c1 - c0) * group > kRowSumMaxRows;
      // The transposed values as the GEMM's weight: hd rows of the unit's positions.
      WeightView values_t;
      if (gemm_values && gv.type == DType::F16) {
        uint16_t* vt = grown(s.values_t16, size_t(hd * unit_kv));
        transpose_values(values, unit_kv, vt, unit_kv, s.rows16);
        values_t = WeightView{DType::F16, vt, hd, unit_kv, size_t(unit_kv) * sizeof(uint16_t)};
      } else if (gemm_values) {
        float* vt = grown(s.values_t, size_t(hd * unit_kv));
        transpose_values(values, unit_kv, vt, unit_kv, s.rows);
        values_t = WeightView{DType::F32, vt, hd, unit_kv, size_t(unit_kv) * sizeof(float)};
      }
      const int rows_per_pass = int(std::clamp<int64_t>(kScoreBudget / (int64_t(group) * unit_kv), 1, c1 - c0));
      for (int i0 = c0; i0 < c1; i0 += rows_per_pass) {
        const int i1 = std::min(c1, i0 + rows_per_pass), rows = i1 - i0;
        const int64_t m = int64_t(rows) * group, n_kv = n_past + i1 - start;
        float* qg = grown(s.queries, size_t(m * hd));
        gather_queries(q, ldq, kvh, group, hd, i0, i1, qg);
        // scores = Q K^T: the head's keys are rows a fixed stride apart in either layout, a typed
        // "weight" of n_kv rows read once for the whole group.
        float* sc = grown(s.scores, size_t(m * n_kv));
        key_scores(inline_pool, WeightView{g.type, keys, n_kv, hd, key_stride}, qg, m, hd, sc, n_kv);
        for (int gi = 0; gi < group; ++gi)
          for (int i = i0; i < i1; ++i)
            normalize_scores(sc + (int64_t(gi) * rows + i - i0) * n_kv, i, n_past - int(start), int(n_kv), scale,
                             how);
        // out = P V
        float* og = grown(s.out, size_t(m * hd));
        if (gemm_values) {
          WeightView pass_values = values_t;
          pass_values.cols = n_kv;  // the pass's rows see positions [start, start + n_kv)
          matmul(inline_pool, pass_values, sc, m, n_kv, og, hd);
        } else {
          std::fill(og, og + m * hd, 0.0f);
          WeightView head_values = values;
          head_values.rows = n_kv;
          value_sums(head_values, sc, m, n_kv, og, hd);
        }
        for (int gi = 0; gi < group; ++gi)
          for (int i = i0; i < i1; ++i)
            std::memcpy(out + i * ldo + (kvh * group + gi) * hd, og + (int64_t(gi) * rows + i - i0) * hd,
                        size_t(hd) * sizeof(float));
      }
    }
  });
}

}  // namespace tandem::cpu
