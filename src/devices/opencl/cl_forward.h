// The transformer forward pass on the OpenCL device, the twin of cpu::CpuForward: the same
// interface, the same buffers (one MemoryPool block, wrapped zero-copy), the same KV cache layout
// (keys [T x kv_dim] per layer, values transposed [kv_dim x T]). The weights stay in the mmap'd
// GGUF, wrapped read-only; logits are written straight into the caller's array (wrapped too).
// Everything of a chunk is enqueued on the device's in-order queue; eval() blocks at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "devices/opencl/cl_ops.h"
#include "devices/opencl/model_weights.h"
#include "model/model.h"
#include "runtime/memory_pool.h"

namespace tandem::opencl {

struct ClForwardOptions {
  int context = 0;      // KV cache length in tokens; 0 means min(model context, 4096)
  int max_batch = 512;  // tokens per prefill chunk
  // Kernels (and the runtime under them) to share between forwards; null builds the default
  // device's (Runtime::create(), which honours TANDEM_OPENCL_DEVICE).
  std::shared_ptr<Ops> ops;
};

class ClForward {
 public:
  static Result<std::unique_ptr<ClForward>> create(std::shared_ptr<const Model> model,
                                                   ClForwardOptions options);

  // As CpuForward::eval: tokens at positions [n_past, n_past + tokens.size()); logits receives
  // n_vocab floats for the last token, or for every token when all_logits is set.
  Status eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits = false);

  const Model& model() const { return *model_; }
  int context() const { return context_; }
  size_t pool_bytes() const { return memory_.total_bytes(); }
  std::string memory_report() const { return memory_.describe(); }
  Ops& ops() const { return *ops_; }
  Runtime& runtime() const { return ops_->runtime(); }
  // Whether the pool and the weights are used in place by the device (no shadow copies).
  bool zero_copy() const { return pool_buf_.zero_copy() && weights_.zero_copy(); }

 private:
  ClForward(std::shared_ptr<const Model> model, ClForwardOptions options);
  Status allocate();
  Status eval_chunk(std::span<const TokenId> tokens, int n_past, const Buffer* logits, size_t logits_offset,
                    bool all_logits);
  WeightRef weight(const Weight& w) const;
  BufRef pool(size_t handle) const;

  std::shared_ptr<const Model> model_;
  ModelConfig cfg_;
  int context_;
  int max_batch_;
  std::shared_ptr<Ops> ops_;
  MemoryPool memory_;
  Buffer pool_buf_;     // the whole pool block
  ModelWeights weights_;

  size_t h_tokens_, h_x_, h_xb_, h_q_, h_k_, h_v_, h_att_, h_gate_, h_up_, h_cos_, h_sin_, h_logit_rows_;
  std::vector<size_t> h_k_cache_, h_v_cache_;
};

}  // namespace tandem::opencl
