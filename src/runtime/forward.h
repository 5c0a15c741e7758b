// What a session needs from a forward pass, whichever devices run it: evaluate tokens at
// positions after n_past (appending to the KV cache) and write logits.
#pragma once

#include <span>
#include <string>

#include "core/status.h"
#include "runtime/execution_report.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem {

class Forward {
 public:
  virtual ~Forward() = default;
  // logits: n_vocab floats for the last token, or for every token when all_logits.
  virtual Status eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits = false) = 0;
  virtual int context() const = 0;
  virtual std::string memory_report() const { return ""; }  // the pool's regions, for --verbose
  virtual ExecutionReport execution_report() const = 0;   // what ran where, copies, NPU graphs
  // A Chrome trace of the work so far, where the forward pass records one (several devices).
  virtual Status write_trace(const std::string& path) const {
    return Unsupported("--trace " + path + ": timelines are recorded for --devices opencl,npu runs");
  }
};

}  // namespace tandem
