// The default NPU pipeline: llm -> state -> tdma -> npu, every pass on one target.
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "passes/Passes.h"

namespace tandem::ir {

void buildNpuPipeline(mlir::OpPassManager& pm, const PipelineOptions& o) {
  pm.addPass(createLlmExpandMlp());
  pm.addPass(createLlmSpecializePhase({o.target}));
  pm.addPass(createLlmFusionClusters({o.target, o.tcm_budget, o.power_cap_w, "search"}));
  pm.addPass(createLlmMarkFallback({o.target}));
  pm.addPass(createLlmToState({o.target, o.layout, o.kv_layout}));
  pm.addPass(createStateToTdma({o.target, o.tcm_budget, "auto", o.power_cap_w, o.fuse}));
  pm.addPass(createTdmaAllocateTcm({o.target, o.tcm_budget}));
  pm.addPass(createTdmaToNpu({o.target}));
  if (o.export_check) pm.addPass(createNpuExport({o.target, ""}));
}

namespace {
struct CliOptions : mlir::PassPipelineOptions<CliOptions> {
  Option<std::string> target{*this, "target", llvm::cl::desc("NPU TargetModel JSON (empty: default)"), llvm::cl::init("")};
  Option<int64_t> tcmBudget{*this, "tcm-budget", llvm::cl::desc("TCM bytes (0: the target's TCM)"), llvm::cl::init(0)};
  Option<double> powerCap{*this, "power-cap", llvm::cl::desc("NPU power cap in W (0: none)"), llvm::cl::init(0)};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("fuse a norm with the linears of its cluster"), llvm::cl::init(true)};
};
}  // namespace

void registerNpuPipeline() {
  mlir::PassPipelineRegistration<CliOptions>(
      "tandem-npu-pipeline", "Lower llm to npu programs (phase, fallback, layout, tiling, TCM, emission, check)",
      [](mlir::OpPassManager& pm, const CliOptions& o) { buildNpuPipeline(pm, {o.target, o.tcmBudget, o.powerCap, "auto", "auto", o.fuse}); });
}

}  // namespace tandem::ir
