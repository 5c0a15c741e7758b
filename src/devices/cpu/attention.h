// Causal grouped-query attention over the KV cache, on the CPU device.
#pragma once

#include <cstdint>

#include "core/kv_layout.h"

namespace tandem {
class ThreadPool;
}

namespace tandem::cpu {

// How scores are formed: s = q.k * scale, then s -> softcap * tanh(s / softcap) when softcap > 0;
// a query at position p sees keys p-window+1..p (window > 0) or 0..p.
struct AttentionScores {
  float scale = 0;    // 0: 1/sqrt(head_dim)
  float softcap = 0;  // 0: none
  int window = 0;     // 0: every earlier key
};

// For n query rows at positions n_past.. : out_i = softmax(scores(q_i, K)) V per head, over the
// keys query i sees. Caches: keys [context x kv_dim] (a row per position), values transposed
// [kv_dim x context], so both products are matmuls. scratch holds pool.size() blocks of
// scratch_stride floats, each at least n * (n_past + n).
void attention(ThreadPool& pool, const float* q, int64_t ldq, const float* k_cache, const float* v_cache,
               float* out, int64_t ldo, int n, int n_heads, int n_kv_heads, int head_dim, int context,
               int n_past, const AttentionScores& how, float* scratch, int64_t scratch_stride);

// The same over a typed cache (core/kv_layout.h): keys of g.type, values of g.v_type (f32, f16,
// q8_0), token- or head-major, as the --cache-type flags or an npu that owns the KV laid it out;
// g.capacity is the context. Threads take (KV head, query rows) units; the query heads sharing a
// KV head go through each product together, so a unit reads its cache once: keys as a typed matmul
// weight, values by weighted_row_sum (decode) or decoded and transposed once for a GEMM (prefill).
// Per-thread scratch is kept between calls.
void attention_pages(ThreadPool& pool, const float* q, int64_t ldq, const KvGeometry& g, const uint8_t* k_pages,
                     const uint8_t* v_pages, float* out, int64_t ldo, int n, int n_heads, int n_past,
                     const AttentionScores& how);

}  // namespace tandem::cpu
