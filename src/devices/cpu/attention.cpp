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

// The causal mask, scale, softcap and softmax of query row i's scores over n_kv keys.
void normalize_scores(float* row, int i, int n_past, int n_kv, float scale, const AttentionScores& how) {
  const int visible = n_past + i + 1;  // causal: query i sees keys 0..n_past+i
  // ...and with a window only the last `window` of them; the others weigh 0.
  const int first = how.window > 0 ? std::max(0, visible - how.window) : 0;
  for (int j = 0; j < first; ++j) row[j] = 0.0f;
  scale_inplace(row + first, visible - first, scale);
  if (how.softcap > 0) softcap_inplace(row + first, visible - first, how.softcap);
  softmax_row(row + first, visible - first, n_kv - first);
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
  std::atomic<int> next{0};
  pool.run([&](int, int) {
    thread_local PagesScratch s;
    ThreadPool inline_pool(1);
    for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      const int kvh = u % kv_heads, c0 = (u / kv_heads) * rows_per_chunk, c1 = std::min(n, c0 + rows_per_chunk);
      if (c0 >= c1) continue;
      const uint8_t* keys = k_pages + kv_offset(g, 0, uint32_t(kvh));
      const WeightView values{gv.type, v_pages + kv_offset(gv, 0, uint32_t(kvh)), n_past + c1, hd,
                              size_t(gv.token_stride_bytes())};
      const int64_t unit_kv = n_past + c1;  // keys the unit's last query sees
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
        const int64_t m = int64_t(rows) * group, n_kv = n_past + i1;
        // The group's queries as m rows, head-major: row gi * rows + (i - i0).
        float* qg = grown(s.queries, size_t(m * hd));
        for (int gi = 0; gi < group; ++gi)
          for (int i = i0; i < i1; ++i)
            std::memcpy(qg + (int64_t(gi) * rows + i - i0) * hd, q + i * ldq + (kvh * group + gi) * hd,
                        size_t(hd) * sizeof(float));
        // scores = Q K^T: the head's keys are rows a fixed stride apart in either layout, a typed
        // "weight" of n_kv rows read once for the whole group.
        float* sc = grown(s.scores, size_t(m * n_kv));
        key_scores(inline_pool, WeightView{g.type, keys, n_kv, hd, size_t(g.token_stride_bytes())}, qg, m, hd, sc,
                   n_kv);
        for (int gi = 0; gi < group; ++gi)
          for (int i = i0; i < i1; ++i)
            normalize_scores(sc + (int64_t(gi) * rows + i - i0) * n_kv, i, n_past, int(n_kv), scale, how);
        // out = P V
        float* og = grown(s.out, size_t(m * hd));
        if (gemm_values) {
          WeightView pass_values = values_t;
          pass_values.cols = n_kv;  // the pass's rows see positions [0, n_kv)
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
