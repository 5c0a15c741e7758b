// The CPU device's non-matmul kernels of the forward pass. Each works on rows of fp32
// activations; matmul lives in matmul/ because it is where the time goes.
#pragma once

#include <cstdint>

#include "core/kv_layout.h"

namespace tandem {
class ThreadPool;
}

namespace tandem::cpu {

// Rows of a row-wise op are spread over the pool's threads from this many values on (a prompt's
// rows); below it (a decode step's one row) they are done before the other threads would wake.
constexpr int64_t kMinValuesToSpread = int64_t(1) << 14;

// y = x / rms(x) * weight, for n rows of dim elements (stride dim).
void rmsnorm(ThreadPool& pool, const float* x, const float* weight, float* y, int64_t n,
             int64_t dim, float eps);

// x += y elementwise over count elements.
void add_inplace(float* x, const float* y, int64_t count);

// Adds a bias vector to each of n rows of width dim (stride ld).
void add_bias(float* x, const float* bias, int64_t n, int64_t dim, int64_t ld);

// gate = silu(gate) * up, elementwise over count elements (SwiGLU).
void swiglu_inplace(float* gate, const float* up, int64_t count);

// gate = gelu(gate) * up with GELU's tanh approximation (GeGLU, Gemma's feed-forward).
void geglu_inplace(float* gate, const float* up, int64_t count);

// x = cap * tanh(x / cap) over count elements (Gemma 2's logit soft-capping).
void softcap_inplace(float* x, int64_t count, float cap);

// x *= s over count elements.
void scale_inplace(float* x, int64_t count, float s);

// Rotary embedding of n rows, each holding n_heads heads of head_dim; cos/sin tables hold
// head_dim/2 values per row. half_split selects the pairing (x[i], x[i+d/2]) instead of
// (x[2i], x[2i+1]).
void rope_inplace(float* x, int64_t n, int64_t ld, int n_heads, int head_dim, const float* cos_table,
                  const float* sin_table, bool half_split);

// Softmax over the first `valid` of each row's elements in place; the rest are set to 0.
void softmax_row(float* row, int64_t valid, int64_t len);

// The softmax before its division: row[i] = exp(row[i] - max) for i < valid, 0 up to len; returns
// the max and the sum of the exps (valid 0: -inf and 0). Attention split over key segments
// normalizes once the segments' parts are merged.
struct SoftmaxParts {
  float max, sum;
};
SoftmaxParts softmax_parts(float* row, int64_t valid, int64_t len);

float dot(const float* a, const float* b, int64_t n);

// Appends n rows of keys and values (kv_dim wide, strides ldk/ldv) at position n_past of one
// layer's cache: keys [context x kv_dim] row by row, values transposed [kv_dim x context].
void kv_store(const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t n, int kv_dim, float* k_cache,
              float* v_cache, int context, int n_past);
// The same into a typed cache (core/kv_layout.h: f32, f16 or q8_0 rows, token- or head-major):
// rows n_past.. of k into g, of v into g.values(). q8_0 rounds as ggml's reference quantizer.
void kv_store_pages(const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t n, const KvGeometry& g,
                    uint8_t* k_pages, uint8_t* v_pages, int n_past);
// The same, a prompt's tokens spread over the pool's threads (kMinValuesToSpread).
void kv_store_pages(ThreadPool& pool, const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t n,
                    const KvGeometry& g, uint8_t* k_pages, uint8_t* v_pages, int n_past);

}  // namespace tandem::cpu
