// What a session needs from a forward pass, whichever devices run it: evaluate tokens at
// positions after n_past (appending to the KV cache) and write logits.
#pragma once

#include <span>
#include <string>

#include "core/status.h"
#include "runtime/execution_report.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem {

// One sequence's tokens in a pass over several (Forward::eval_sequences).
struct SequenceTokens {
  int seq = 0;                       // which cache: 0 .. sequences() - 1
  std::span<const TokenId> tokens;  // at positions n_past, n_past + 1, ...
  int n_past = 0;
  bool logits = false;  // write the logits of its last token
};

class Forward {
 public:
  virtual ~Forward() = default;
  // logits: n_vocab floats for the last token, or for every token when all_logits. Sequence 0.
  virtual Status eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits = false) = 0;

  // Sequences with a KV cache of their own (a server's slots); eval() is sequence 0.
  virtual int sequences() const { return 1; }
  // Several sequences' tokens in one pass (at most max_batch() in all, each sequence at most
  // once): the weights are read once for all of them. The logits of the parts that ask are
  // written to `logits`, n_vocab floats each, in the parts' order.
  virtual Status eval_sequences(std::span<const SequenceTokens> parts, float* logits);
  virtual int max_batch() const { return 1; }
  virtual int context() const = 0;
  virtual std::string memory_report() const { return ""; }  // the pool's regions, for --verbose
  virtual ExecutionReport execution_report() const = 0;   // what ran where, copies, NPU graphs
  // A Chrome trace of the work so far, where the forward pass records one (several devices).
  virtual Status write_trace(const std::string& path) const {
    return Unsupported("--trace " + path + ": timelines are recorded for --devices opencl,npu runs");
  }
};

}  // namespace tandem
