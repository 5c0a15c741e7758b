#include "devices/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "core/half.h"
#include "core/thread_pool.h"
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

void attention_pages(ThreadPool& pool, const float* q, int64_t ldq, const KvGeometry& g, const uint16_t* k_pages,
                     const uint16_t* v_pages, float* out, int64_t ldo, int n, int n_heads, int n_past,
                     const AttentionScores& how, float* scratch, int64_t scratch_stride) {
  const int hd = int(g.head_dim);
  const int group = n_heads / int(g.heads);
  const int n_kv = n_past + n;
  const float scale = how.scale != 0 ? how.scale : 1.0f / std::sqrt(float(hd));
  const size_t stride_bytes = size_t(g.token_stride()) * 2;
  pool.run([&](int ith, int nth) {
    ThreadPool inline_pool(1);
    float* scores = scratch + int64_t(ith) * scratch_stride;
    for (int h = ith; h < n_heads; h += nth) {
      const uint32_t kvh = uint32_t(h / group);
      // A head's keys are rows token_stride apart in either layout: an fp16 "weight" of n_kv rows.
      const WeightView keys{DType::F16, k_pages + kv_offset(g, 0, kvh) / 2, n_kv, hd, stride_bytes};
      matmul(inline_pool, keys, q + h * hd, n, ldq, scores, n_kv);
      for (int i = 0; i < n; ++i) normalize_scores(scores + int64_t(i) * n_kv, i, n_past, n_kv, scale, how);
      // out_i = sum_j p[i, j] v_j over the head's value rows (not transposed here: the npu wrote them).
      const uint16_t* values = v_pages + kv_offset(g, 0, kvh) / 2;
      for (int i = 0; i < n; ++i) {
        const float* p = scores + int64_t(i) * n_kv;
        float* o = out + i * ldo + h * hd;
        std::fill(o, o + hd, 0.0f);
        for (int j = 0; j < n_kv; ++j) {
          if (p[j] == 0.0f) continue;  // masked (window) or underflowed
          const uint16_t* v = values + size_t(j) * g.token_stride();
          for (int d = 0; d < hd; ++d) o[d] += p[j] * fp16_to_f32(v[d]);
        }
      }
    }
  });
}

}  // namespace tandem::cpu
