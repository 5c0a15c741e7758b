// The transformer forward pass on the CPU device: prefill runs the prompt as matrix-matrix
// work (all tokens of a chunk through each matmul at once), decode as matrix-vector.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/forward.h"
#include "runtime/memory_pool.h"

namespace tandem::cpu {

struct ForwardOptions {
  int n_threads = 2;
  int context = 0;      // KV cache length in tokens; 0 means min(model context, 4096)
  int max_batch = 512;  // tokens per prefill chunk (activation buffers are sized for this)
};

class CpuForward final : public Forward {
 public:
  static Result<std::unique_ptr<CpuForward>> create(std::shared_ptr<const Model> model,
                                                    ForwardOptions options);

  // Runs tokens at positions [n_past, n_past + tokens.size()), appending their keys and values
  // to the KV cache. logits receives n_vocab floats for the last token, or for every token
  // (row after row) when all_logits is set.
  Status eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits = false) override;

  const Model& model() const { return *model_; }
  int context() const override { return context_; }
  int n_threads() const { return pool_.size(); }
  size_t pool_bytes() const { return memory_.total_bytes(); }
  std::string memory_report() const override { return memory_.describe(); }
  ExecutionReport execution_report() const override { return report_with_pool("cpu fast path", memory_); }

 private:
  CpuForward(std::shared_ptr<const Model> model, ForwardOptions options);
  Status allocate();
  void eval_chunk(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits);
  void attention(int layer, int n, int n_past);
  void fill_rope_tables(int n, int n_past);

  std::shared_ptr<const Model> model_;
  ModelConfig cfg_;
  int context_;
  int max_batch_;
  ThreadPool pool_;
  MemoryPool memory_;

  // Regions of memory_ (see allocate() for their shapes).
  size_t h_x_, h_xb_, h_q_, h_k_, h_v_, h_att_, h_gate_, h_up_, h_scores_, h_cos_, h_sin_;
  size_t h_logit_rows_;
  std::vector<size_t> h_k_cache_, h_v_cache_;
};

}  // namespace tandem::cpu
