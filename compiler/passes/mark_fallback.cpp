// llm-mark-fallback: which llm ops leave the NPU, and what leaving costs.
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "npu/cost_model.h"
#include "passes/Passes.h"
#include "passes/tensor_bytes.h"
#include "passes/matmul_spec.h"
#include "passes/vector_rows.h"
#include "passes/target_option.h"

namespace tandem::ir {
#define GEN_PASS_DEF_LLMMARKFALLBACK
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;
using tandem::ir::llm::activationRows;

namespace tandem::ir {
namespace {

// Why the NPU cannot run `op` on `t` ("" when it can).
std::string npuBlocker(Operation* op, const tandem::npu::TargetModel& t) {
  if (auto kv = dyn_cast<llm::KvAppendOp>(op)) {  // pages stream through two staging buffers of one token row each at least
    const int64_t row = int64_t(tensorBytes(kv.getRows())) / std::max<int64_t>(1, activationRows(kv));
    return 2 * row <= int64_t(t.tcm.bytes) ? "" : "a KV row of " + std::to_string(row) + " B does not fit TCM twice";
  }
  if (auto elt = eltOpOf(op)) {  // the vector unit's row library: two chunks of at least one row must fit
    const int64_t d = llvm::cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(1);
    const uint64_t row = tandem::npu::oplib::elementwise_tcm_bytes(*elt, 1, uint32_t(d), t);
    return row <= t.tcm.bytes ? "" : "one row of " + std::to_string(d) + " values needs " + std::to_string(row) + " B of TCM";
  }
  auto lin = dyn_cast<llm::LinearOp>(op);
  if (!lin) return "no NPU lowering for " + op->getName().getStringRef().str();
  auto x = llvm::cast<RankedTensorType>(lin.getInput().getType());
  auto w = llvm::cast<RankedTensorType>(lin.getWeight().getType());
  auto s = matmulSpec(x.getDimSize(0), x.getDimSize(1), w.getDimSize(0), *weightFormat(lin.getQuant()),
                      lin.getDataflow().value_or("activation_stationary"));
  auto plan = tandem::npu::oplib::plan_matmul(s, t);
  return plan.ok() ? "" : plan.status().message();
}

struct MarkFallback : impl::LlmMarkFallbackBase<MarkFallback> {
  using LlmMarkFallbackBase::LlmMarkFallbackBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    const tandem::npu::CostModel cost(*target);
    auto* llmDialect = getContext().getLoadedDialect<llm::LlmDialect>();
    Builder b(&getContext());
    getOperation().walk([&](Operation* op) {
      if (op->getDialect() != llmDialect) return;
      const std::string blocker = npuBlocker(op, *target);
      if (blocker.empty()) return;
      if (!op->hasAttr("fallback")) op->setAttr("fallback", b.getStringAttr(isa<llm::SampleOp>(op) ? "cpu" : "gpu"));
      // Leaving the NPU: the activation goes out and the result comes back.
      uint64_t bytes = tensorBytes(op->getOperand(0));
      for (Value v : op->getResults()) bytes += tensorBytes(v);
      op->setAttr("switch_cost_s", b.getF64FloatAttr(cost.offload_switch_seconds(bytes)));
      op->setAttr("fallback_reason", b.getStringAttr(blocker));
    });
  }
};

}  // namespace
}  // namespace tandem::ir
