// The OpenCL device's kernels for every op of the forward pass, enqueued asynchronously on the
// runtime's in-order queue. Each call validates its arguments, sets the kernel's arguments and
// enqueues it; `done`, when given, receives the command's completion event. Nothing blocks:
// call Runtime::finish() (or Event::wait) before the host reads results.
//
// Buffers are BufRef (cl_mem + byte offset); fp32 activations, weights in their GGUF type
// (WeightRef), see kernels/common.cl for the numerics. An Ops object owns cl_kernel objects
// whose arguments are set per call, so one Ops must not be used from two threads at once.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/kv_layout.h"
#include "devices/opencl/cl_runtime.h"

namespace tandem::opencl {

// A weight matrix of `rows` x `cols` in `type` (GGUF layout, row stride row_bytes).
struct WeightRef {
  DType type = DType::F32;
  BufRef data;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
};

// The prefill GEMM kernel: tiled through local memory (the GPU form), or register-blocked
// without local memory (the form that suits devices running work-groups as loops on CPU cores,
// such as PoCL). kAuto picks register-blocked on CPU devices, local-tiled elsewhere.
enum class GemmForm { kAuto, kLocalTiled, kRegisterBlocked };

// Below this many activation rows matmul runs the GEMV kernels (one work-group per output).
constexpr int64_t kGemmMinRows = 4;

// How attention forms its scores (graph::OpCall's attention fields).
struct AttentionScores {
  float scale = 0;    // 0: 1/sqrt(head_dim)
  float softcap = 0;  // 0: none
  int window = 0;     // 0: every earlier key
};

class Ops {
 public:
  // Builds the embedded kernel sources for the runtime's device.
  static Result<std::shared_ptr<Ops>> create(std::shared_ptr<Runtime> runtime);
  ~Ops();
  Ops(const Ops&) = delete;
  Ops& operator=(const Ops&) = delete;

  Runtime& runtime() const { return *rt_; }
  const std::shared_ptr<Runtime>& runtime_ptr() const { return rt_; }
  static bool supports(DType t);  // matmul / get_rows weight types

  // y[i, :] = W[ids[i], :] dequantized, times scale, for n ids (int32).
  Status get_rows(const WeightRef& w, BufRef ids, int64_t n, BufRef y, int64_t ldy, Event* done = nullptr,
                  float scale = 1.0f);
  // y[i, r] = sum_k x[i, k] W[r, k]; GEMV kernels for m < kGemmMinRows, GEMM (GemmForm::kAuto)
  // otherwise.
  Status matmul(const WeightRef& w, BufRef x, int64_t m, int64_t ldx, BufRef y, int64_t ldy,
                Event* done = nullptr);
  Status gemv(const WeightRef& w, BufRef x, int64_t m, int64_t ldx, BufRef y, int64_t ldy, Event* done = nullptr);
  Status gemm(const WeightRef& w, BufRef x, int64_t m, int64_t ldx, BufRef y, int64_t ldy, Event* done = nullptr,
              GemmForm form = GemmForm::kAuto);

  Status rmsnorm(BufRef x, BufRef weight, BufRef y, int64_t n, int64_t dim, float eps, Event* done = nullptr);
  Status add_inplace(BufRef x, BufRef y, int64_t count, Event* done = nullptr);
  Status add_bias(BufRef x, BufRef bias, int64_t n, int64_t dim, int64_t ld, Event* done = nullptr);
  Status swiglu_inplace(BufRef gate, BufRef up, int64_t count, Event* done = nullptr);
  Status geglu_inplace(BufRef gate, BufRef up, int64_t count, Event* done = nullptr);
  Status softcap_inplace(BufRef x, int64_t count, float cap, Event* done = nullptr);
  Status rope_inplace(BufRef x, int64_t n, int64_t ld, int n_heads, int head_dim, BufRef cos_table,
                      BufRef sin_table, bool half_split, Event* done = nullptr);
  Status softmax_rows(BufRef x, int64_t rows, int64_t valid, int64_t len, Event* done = nullptr);
  // Appends n rows of k and v ([n x kv_dim]) at n_past of a layer's cache (keys [T x kv_dim],
  // values transposed [kv_dim x T]).
  Status kv_store(BufRef k, BufRef v, BufRef k_cache, BufRef v_cache, int64_t n, int kv_dim, int T,
                  int n_past, Event* done = nullptr);
  // Causal GQA attention for n query rows at positions n_past..: q [n x ldq] holding n_heads
  // heads of head_dim; out [n x ldo].
  Status attention(BufRef q, int64_t ldq, BufRef k_cache, BufRef v_cache, BufRef out, int64_t ldo,
                   int64_t n, int n_heads, int n_kv_heads, int head_dim, int T, int n_past,
                   Event* done = nullptr, const AttentionScores& how = AttentionScores());

  // The same two ops over a typed KV cache (core/kv_layout.h: keys of g.type, values of g.v_type,
  // each f32, f16 or q8_0; token- or head-major; addressed by kv_offset only). k_pages / v_pages
  // are element 0 of (token 0, head 0) of each cache; g.capacity is the context. The store writes
  // the bytes cpu::kv_store_pages writes (fp16 round to nearest even; q8_0 as ggml's reference
  // quantizer); k, v: n rows of g.width() floats, strides ldk / ldv.
  static bool supports_kv(const KvGeometry& g);  // both types are KV cache types the kernels read
  Status kv_store_pages(BufRef k, int64_t ldk, BufRef v, int64_t ldv, int64_t n, const KvGeometry& g,
                        BufRef k_pages, BufRef v_pages, int n_past, Event* done = nullptr);
  // attention()'s semantics over the typed cache: n query rows at n_past.., n_heads query heads
  // sharing g.heads KV heads; head_dim = g.head_dim <= kMaxHeadDim.
  Status attention_pages(BufRef q, int64_t ldq, const KvGeometry& g, BufRef k_pages, BufRef v_pages, BufRef out,
                         int64_t ldo, int64_t n, int n_heads, int n_past, Event* done = nullptr,
                         const AttentionScores& how = AttentionScores());

  // Writes `value` into the 64-bit flag at `flag` once every command enqueued before it is done.
  Status signal_flag(BufRef flag, uint64_t value, Event* done = nullptr);

  static constexpr int kMaxHeadDim = 256;  // ATT_MAX_HD in kernels/ops.cl

 private:
  explicit Ops(std::shared_ptr<Runtime> rt) : rt_(std::move(rt)) {}
  Result<cl_kernel> kernel(const std::string& name) const;
  // A gated activation kernel (swiglu, geglu): gate = act(gate) * up over count elements.
  Status gated_inplace(const std::string& kernel_name, BufRef gate, BufRef up, int64_t count, Event* done);

  std::shared_ptr<Runtime> rt_;
  cl_program program_ = nullptr;
  std::map<std::string, cl_kernel> kernels_;
};

// The embedded OpenCL C source (kernels/*.cl, concatenated at build time).
const char* kernel_source();

}  // namespace tandem::opencl
