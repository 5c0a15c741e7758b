#include "devices/cpu/ops.h"

#include "core/fp16_rows.h"
#include "core/half.h"
#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/thread_pool.h"

// These loops are simple enough for the compiler to vectorize; target_clones builds an AVX-512,
// an AVX2 and a baseline copy of each and picks one at load time, so the binary stays portable.
#if defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define TANDEM_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define TANDEM_VECTOR_CLONES
#endif

namespace tandem::cpu {
namespace {

// exp(x) in branch-free arithmetic the compiler can vectorize (std::exp is a library call it
// cannot): x = n*ln2 + r with |r| <= ln2/2, e^r by its degree-6 Taylor polynomial (relative error
// below 2e-7, about one fp32 ulp), and 2^n built directly in the exponent bits.
inline float exp_approx(float x) {
  x = std::min(88.0f, std::max(-87.0f, x));
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;  // ln2 in two parts
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

}  // namespace

TANDEM_VECTOR_CLONES
float dot(const float* a, const float* b, int64_t n) {
  // Eight partial sums break the dependency chain and let the compiler keep a vector of them.
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0.0f;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

TANDEM_VECTOR_CLONES
static void rmsnorm_row(const float* x, const float* w, float* y, int64_t dim, float eps) {
  float ss = dot(x, x, dim);
  const float scale = 1.0f / std::sqrt(ss / float(dim) + eps);
  for (int64_t i = 0; i < dim; ++i) y[i] = x[i] * scale * w[i];
}

void rmsnorm(ThreadPool& pool, const float* x, const float* weight, float* y, int64_t n,
             int64_t dim, float eps) {
  if (n == 1) {
    rmsnorm_row(x, weight, y, dim, eps);
    return;
  }
  pool.parallel_for(size_t(n), [&](size_t b, size_t e, int) {
    for (size_t r = b; r < e; ++r) rmsnorm_row(x + r * dim, weight, y + r * dim, dim, eps);
  });
}

TANDEM_VECTOR_CLONES
void add_inplace(float* x, const float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] += y[i];
}

void add_bias(float* x, const float* bias, int64_t n, int64_t dim, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) add_inplace(x + r * ld, bias, dim);
}

TANDEM_VECTOR_CLONES
void swiglu_inplace(float* gate, const float* up, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + exp_approx(-g)) * up[i];
  }
}

void rope_inplace(float* x, int64_t n, int64_t ld, int n_heads, int head_dim, const float* cos_table,
                  const float* sin_table, bool half_split) {
  const int half = head_dim / 2;
  for (int64_t r = 0; r < n; ++r) {
    const float* c = cos_table + r * half;
    const float* s = sin_table + r * half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + r * ld + int64_t(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const int i0 = half_split ? i : 2 * i;
        const int i1 = half_split ? i + half : 2 * i + 1;
        const float a = v[i0], b = v[i1];
        v[i0] = a * c[i] - b * s[i];
        v[i1] = a * s[i] + b * c[i];
      }
    }
  }
}

// tanh(y) = 1 - 2 / (1 + e^(2y)), through the vectorizable exp (saturates correctly at +-1).
inline float tanh_approx(float y) { return 1.0f - 2.0f / (1.0f + exp_approx(2.0f * y)); }

TANDEM_VECTOR_CLONES
void geglu_inplace(float* gate, const float* up, int64_t count) {
  // gelu(x) = x/2 (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3); x/2 (1 + tanh(u)) = x / (1 + e^(-2u)).
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < count; ++i) {
    const float x = gate[i];
    const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
    gate[i] = x / (1.0f + exp_approx(-2.0f * u)) * up[i];
  }
}

TANDEM_VECTOR_CLONES
void softcap_inplace(float* x, int64_t count, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < count; ++i) x[i] = cap * tanh_approx(x[i] * inv);
}

TANDEM_VECTOR_CLONES
void scale_inplace(float* x, int64_t count, float s) {
  for (int64_t i = 0; i < count; ++i) x[i] *= s;
}

// A float maximum or sum kept in one running value is an ordered reduction, which the compiler may
// not split into vector lanes: the loop over a prompt's attention scores then ran one exp at a time
// (a third of a 512-token prompt's time at depth 2048). The maximum is an `omp simd` reduction
// (the order of a maximum does not change it) and the sum sixteen running lanes, folded at the end.
TANDEM_VECTOR_CLONES
SoftmaxParts softmax_parts(float* row, int64_t valid, int64_t len) {
  constexpr int kLanes = 16;
  float lane_sum[kLanes] = {};
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t i = 0; i < valid; ++i) mx = mx > row[i] ? mx : row[i];  // maxps's operand order
  int64_t i = 0;
  for (; i + kLanes <= valid; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      row[i + j] = exp_approx(row[i + j] - mx);
      lane_sum[j] += row[i + j];
    }
  }
  float sum = 0.0f;
  for (; i < valid; ++i) {
    row[i] = exp_approx(row[i] - mx);
    sum += row[i];
  }
  for (int j = 0; j < kLanes; ++j) sum += lane_sum[j];
  for (int64_t i = valid; i < len; ++i) row[i] = 0.0f;
  return {mx, sum};
}

TANDEM_VECTOR_CLONES
void softmax_row(float* row, int64_t valid, int64_t len) {
  const float inv = 1.0f / softmax_parts(row, valid, len).sum;
  for (int64_t i = 0; i < valid; ++i) row[i] *= inv;
}

void kv_store(const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t n, int kv_dim, float* k_cache,
              float* v_cache, int context, int n_past) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(k_cache + (n_past + i) * kv_dim, k + i * ldk, size_t(kv_dim) * sizeof(float));
    for (int d = 0; d < kv_dim; ++d) v_cache[int64_t(d) * context + n_past + i] = v[i * ldv + d];
  }
}

namespace {

// One head's row of a token (head_dim floats) into a cache element of type t.
void store_head_row(const float* x, uint32_t head_dim, DType t, uint8_t* dst) {
  switch (t) {
    case DType::F16: narrow_fp16_row(x, dst, int(head_dim), false); return;
    case DType::Q8_0: quantize_row_q8_0(x, reinterpret_cast<BlockQ8_0*>(dst), head_dim); return;
    default: std::memcpy(dst, x, size_t(head_dim) * sizeof(float)); return;  // f32 (check_kv_type)
  }
}

// Tokens [i0, i1) of kv_store_pages.
void store_tokens(const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t i0, int64_t i1, const KvGeometry& g,
                  uint8_t* k_pages, uint8_t* v_pages, int n_past) {
  const KvGeometry gv = g.values();
  for (int64_t i = i0; i < i1; ++i)
    for (uint32_t h = 0; h < g.heads; ++h) {
      const int64_t from = int64_t(h) * g.head_dim;
      store_head_row(k + i * ldk + from, g.head_dim, g.type, k_pages + kv_offset(g, uint32_t(n_past + i), h));
      store_head_row(v + i * ldv + from, g.head_dim, gv.type, v_pages + kv_offset(gv, uint32_t(n_past + i), h));
    }
}

}  // namespace

void kv_store_pages(const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t n, const KvGeometry& g,
                    uint8_t* k_pages, uint8_t* v_pages, int n_past) {
  store_tokens(k, ldk, v, ldv, 0, n, g, k_pages, v_pages, n_past);
}

void kv_store_pages(ThreadPool& pool, const float* k, int64_t ldk, const float* v, int64_t ldv, int64_t n,
                    const KvGeometry& g, uint8_t* k_pages, uint8_t* v_pages, int n_past) {
  if (pool.size() == 1 || n * int64_t(g.heads) * g.head_dim < kMinValuesToSpread)
    return store_tokens(k, ldk, v, ldv, 0, n, g, k_pages, v_pages, n_past);
  pool.parallel_for(size_t(n), [&](size_t b, size_t e, int) {
    store_tokens(k, ldk, v, ldv, int64_t(b), int64_t(e), g, k_pages, v_pages, n_past);
  });
}

}  // namespace tandem::cpu
