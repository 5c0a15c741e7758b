// Causal grouped-query attention over the KV cache, on the CPU device.
#pragma once

#include <cstdint>

namespace tandem {
class ThreadPool;
}

namespace tandem::cpu {

// For n query rows at positions n_past.. : out_i = softmax(q_i . K^T / sqrt(d)) V per head, over
// keys 0..n_past+i. Caches: keys [context x kv_dim] (a row per position), values transposed
// [kv_dim x context], so both products are matmuls. scratch holds pool.size() blocks of
// scratch_stride floats, each at least n * (n_past + n).
void attention(ThreadPool& pool, const float* q, int64_t ldq, const float* k_cache, const float* v_cache,
               float* out, int64_t ldo, int n, int n_heads, int n_kv_heads, int head_dim, int context,
               int n_past, float* scratch, int64_t scratch_stride);

}  // namespace tandem::cpu
