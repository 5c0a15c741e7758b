// The NPU compiler's passes (documentation: Passes.td) and the default pipeline that runs them.
#pragma once

#include <memory>
#include <string>

#include "dialects/llm/LlmDialect.h"
#include "dialects/npu/NpuDialect.h"
#include "dialects/state/StateDialect.h"
#include "dialects/tdma/TdmaDialect.h"
#include "mlir/Pass/Pass.h"

namespace tandem::ir {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

struct PipelineOptions {
  std::string target;      // TargetModel JSON ("" = default)
  int64_t tcm_budget = 0;  // 0 = the target's TCM
  double power_cap_w = 0;  // 0 = uncapped
  std::string layout = "auto";     // weight layout
  std::string kv_layout = "auto";  // KV cache layout
  bool fuse = true;                // a norm + the linears of its cluster as one program (state-to-tdma fuse=)
  bool export_check = true;        // end with npu-export (off: the caller converts and checks each program itself)
};
// llm-expand-mlp, llm-specialize-phase, llm-fusion-clusters, llm-mark-fallback, llm-to-state, state-to-tdma, tdma-allocate-tcm,
// tdma-to-npu, npu-export (verify only).
void buildNpuPipeline(mlir::OpPassManager& pm, const PipelineOptions& o);
// Registers the above as `--tandem-npu-pipeline` (options target=, tcm-budget=).
void registerNpuPipeline();

}  // namespace tandem::ir
