// The decoder run as the graph's op list (graph::build_forward) over the buffers of one memory
// pool (graph::BufferPlan): the part every way of running a model shares. eval() checks the
// tokens and positions, cuts the tokens into chunks of at most max_batch, fills each chunk's
// token ids and rope tables, builds its ops and hands them to run_ops(): one device in order
// (GraphForward) or several through a partition and the driver (HeteroForward).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/memory_pool.h"
#include "graph/transformer_graph.h"
#include "runtime/forward.h"

namespace tandem {

// The sizes a decoder forward is laid out for.
struct ForwardShape {
  int context = 0;      // KV cache positions; 0: min(model context, 4096)
  int max_batch = 512;  // tokens per chunk (activation slots hold this many rows, or more)
  // Resolves the defaults against the model and checks the ranges; errors name the option.
  static Result<ForwardShape> resolve(const ModelConfig& c, int context, int max_batch);
};

class DecoderForward : public Forward {
 public:
  // Tokens at positions [n_past, n_past + tokens.size()): each must be in the vocabulary and the
  // positions inside the context. logits: n_vocab floats for the last token, or for every token
  // (row after row) when all_logits.
  Status eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits = false) final;
  int sequences() const final { return buffers_.n_seq; }
  Status eval_sequences(std::span<const SequenceTokens> parts, float* logits) final;
  int max_batch() const final { return buffers_.max_batch; }
  int context() const final { return buffers_.context; }
  std::string memory_report() const override { return memory_.describe(); }
  const Model& model() const { return *model_; }

 protected:
  explicit DecoderForward(std::shared_ptr<const Model> model) : model_(std::move(model)) {}
  // Where a forward pass runs each chunk's ops on one device, any chunk may mix sequences; the
  // multi-device driver's partitions expect one sequence per chunk.
  virtual bool runs_mixed_chunks() const { return false; }
  // Runs one chunk's ops, in order of their data dependencies, to completion.
  virtual Status run_ops(const std::vector<graph::OpCall>& ops) = 0;

  std::shared_ptr<const Model> model_;
  MemoryPool memory_;       // laid out by the subclass's create(): graph::BufferPlan + its own regions
  graph::Buffers buffers_;  // bound after memory_.allocate()
};

}  // namespace tandem
