// The ops of the forward pass: the vocabulary in which the graph builder describes a decoder and
// every device receives its work. An op names its weights and its fp32 activations in shared
// memory; the devices (devices/) implement them, the partitioner (runtime/) splits and places them,
// the simulator prices them and the compiler lowers them. Nothing here knows about a device.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "core/kv_layout.h"
#include "core/status.h"
#include "model/model.h"

namespace tandem::graph {

// The ops of the forward pass, as every device receives them.
enum class OpKind { kGetRows, kRmsNorm, kMatmul, kAddBias, kRope, kKvStore, kAttention, kSwiglu, kAdd, kGeglu, kSoftcap,
                    kNormLinear };
const char* op_kind_name(OpKind k);

// An fp32 activation in shared memory: rows x cols, row stride ld (elements).
struct Act {
  float* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  // Rows the underlying buffer holds from `data` on (0: just `rows`). Rows past `rows` are
  // scratch this call may not rely on: a static-shape device may pad into them in place, reading
  // whatever is there and writing results nobody reads, instead of copying into a staging buffer.
  int64_t capacity = 0;
  int64_t capacity_rows() const { return capacity > rows ? capacity : rows; }
};

// One op invocation with everything a device needs. Which fields an op reads:
//   get_rows   weight (embedding), ids[out.rows], scale (0: 1) -> out (rows times scale)
//   rmsnorm    a, weight (gain), eps                        -> out
//   matmul     a (x), weight rows [row_begin, row_end)      -> out columns [row_begin, row_end)
//              (a row range is how a weight-centric split gives each device its share; each
//              device writes only its columns, so merging a split costs nothing)
//   add_bias   weight (bias)                                -> out (in place)
//   rope       cos/sin [out.rows x head_dim/2], n_heads, head_dim, half_split -> out (in place)
//   kv_store   a (k), b (v), kv_dim = a.cols, n_past, context -> k_cache, v_cache (or k_pages, v_pages)
//   attention  a (q), k_cache, v_cache (or k_pages, v_pages), n_heads, n_kv_heads, head_dim, n_past, context,
//              scale (score = q.k * scale; 0: 1/sqrt(head_dim)), softcap (score -> c*tanh(score/c); 0: none),
//              window (query at position p sees keys p-window+1..p; 0: all before it) -> out
//   swiglu     a (up)                                       -> out (gate = silu(gate) * up, in place)
//   geglu      a (up)                                       -> out (gate = gelu_tanh(gate) * up, in place)
//   add        a                                            -> out (in place, residual)
//   softcap    softcap                                      -> out (x -> c*tanh(x/c), in place)
//   norm_linear  a (x), weight (gain), eps, proj[0..n_proj) -> proj[i].out = rmsnorm(x) . proj[i].weight^T
//              (an rmsnorm and the projections reading it, as one program: EdgeLLM-MLIR's fusion
//              cluster. `out` is the buffer the unfused rmsnorm writes: a device may leave it
//              unwritten, so nothing may read it after the projections. Only the npu runs it.)
struct OpCall {
  OpKind kind = OpKind::kMatmul;
  const Weight* weight = nullptr;
  int64_t row_begin = 0, row_end = 0;
  Act a, b, out;
  const int32_t* ids = nullptr;
  float eps = 0;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0, n_past = 0, context = 0;
  float scale = 0;    // get_rows, attention (see above)
  float softcap = 0;  // attention, softcap
  int window = 0;     // attention
  const float* cos = nullptr;
  const float* sin = nullptr;
  bool half_split = false;
  float* k_cache = nullptr;  // keys [context x kv_dim]
  float* v_cache = nullptr;  // values transposed [kv_dim x context]
  // kv_store / attention over a typed cache instead of k_cache / v_cache (capacity 0: the host
  // fp32 layout above): f16 or q8_0 token-major rows (--cache-type-k/v), or, where an npu owns the
  // layer's KV, fp16 pages in the compiled layout (core/kv_layout.h). Byte addresses.
  KvGeometry kv_pages{0, 1, 0, 0, KvLayout::kTokenMajor};
  uint8_t* k_pages = nullptr;
  uint8_t* v_pages = nullptr;
  bool paged_kv() const { return kv_pages.capacity > 0; }
  // norm_linear: the projections (whole weights) and where each writes.
  struct Projection {
    const Weight* weight = nullptr;
    Act out;
  };
  static constexpr int kMaxProjections = 4;  // q, k, v (gate, up): what a fusion cluster reads
  std::array<Projection, kMaxProjections> proj{};
  int n_proj = 0;

  // A matmul of weight rows [row_begin, row_end) of x (m rows, stride ldx) into y (stride ldy).
  static OpCall matmul(const Weight* w, int64_t row_begin, int64_t row_end, const float* x, int64_t m,
                       int64_t ldx, float* y, int64_t ldy);
  std::string describe() const;  // for errors and traces
  // The attention's score multiplier (scale, or 1/sqrt(head_dim) when 0).
  float attention_scale() const;
  // The first key position query row i sees (window), and one past the last (causal).
  int first_visible_key(int i) const { return window > 0 ? std::max(0, n_past + i + 1 - window) : 0; }
};

// A graph a static-shape device builds ahead of time: one op at a fixed shape (for a matmul,
// a weight's row range at a fixed number of activation rows; for an elementwise op, its rows x
// cols, and for rmsnorm the gain weight and eps that are baked into the graph).
struct GraphSpec {
  OpKind kind = OpKind::kMatmul;
  const Weight* weight = nullptr;
  int64_t row_begin = 0, row_end = 0;
  int64_t m = 0;     // activation rows
  int64_t cols = 0;  // output columns (the full width; a matmul writes [row_begin, row_end) of it)
  float eps = 0;     // rmsnorm, norm_linear
  std::array<const Weight*, OpCall::kMaxProjections> proj{};  // norm_linear: the projections' weights
  int n_proj = 0;
  KvGeometry kv{0, 1, 0, 0, KvLayout::kTokenMajor};  // kv_store into pages: the cache's layout
  static GraphSpec of(const OpCall& call);
  std::string key() const;  // identifies the graph in the device's cache
};

// Checks every device's preconditions; the message names the op, the field and the value.
Status validate_call(const OpCall& call);

}  // namespace tandem::graph
