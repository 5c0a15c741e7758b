// llm-specialize-phase: the phase of every llm op, and the dataflow of every linear for its phase.
#include "mlir/IR/BuiltinOps.h"
#include "passes/Passes.h"
#include "passes/matmul_spec.h"
#include "passes/target_option.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace tandem::ir {
#define GEN_PASS_DEF_LLMSPECIALIZEPHASE
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

struct SpecializePhase : impl::LlmSpecializePhaseBase<SpecializePhase> {
  using LlmSpecializePhaseBase::LlmSpecializePhaseBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    auto* llmDialect = getContext().getLoadedDialect<llm::LlmDialect>();
    WalkResult r = getOperation().walk([&](Operation* op) {
      if (op->getDialect() != llmDialect) return WalkResult::advance();
      const int64_t rows = llm::activationRows(op);
      StringRef phase = rows == 1 ? "decode" : "prefill";
      if (auto f = op->getParentOfType<func::FuncOp>())
        if (auto fixed = f->getAttrOfType<StringAttr>("llm.phase")) phase = fixed.getValue();
      if (auto set = op->getAttrOfType<StringAttr>("phase"); set && set.getValue() != phase) {
        op->emitError() << "phase \"" << set.getValue() << "\" conflicts with \"" << phase << "\" ("
                        << rows << " rows)";
        return WalkResult::interrupt();
      }
      if (phase == "decode" && rows != 1) {
        op->emitError() << "decode phase needs one row per step, this op has " << rows;
        return WalkResult::interrupt();
      }
      op->setAttr("phase", StringAttr::get(&getContext(), phase));
      if (auto lin = dyn_cast<llm::LinearOp>(op); lin && !lin.getDataflow())
        lin.setDataflow(chooseDataflow(lin, *target));
      return WalkResult::advance();
    });
    if (r.wasInterrupted()) signalPassFailure();
  }

  // The dataflow the cost model prices lower for this shape; activation-stationary on a tie (it
  // streams every weight exactly once per n-block).
  static StringRef chooseDataflow(llm::LinearOp lin, const tandem::npu::TargetModel& t) {
    auto x = llvm::cast<RankedTensorType>(lin.getInput().getType());
    auto w = llvm::cast<RankedTensorType>(lin.getWeight().getType());
    const DType format = *weightFormat(lin.getQuant());  // the verifier admits only known formats
    auto price = [&](StringRef df) {
      return libraryCycles(matmulSpec(x.getDimSize(0), x.getDimSize(1), w.getDimSize(0), format, df), t);
    };
    const auto ws = price("weight_stationary"), as = price("activation_stationary");
    if (ws && (!as || *ws < *as)) return "weight_stationary";
    return "activation_stationary";
  }
};

}  // namespace
}  // namespace tandem::ir
