// llm-to-state: a linear becomes a weight pack (layout chosen on the target) and a state.matmul.
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/Passes.h"
#include "passes/matmul_spec.h"
#include "passes/target_option.h"

namespace tandem::ir {
#define GEN_PASS_DEF_LLMTOSTATE
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

struct LlmToStatePass : impl::LlmToStateBase<LlmToStatePass> {
  using LlmToStateBase::LlmToStateBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    if (layout != "auto" && layout != "interleaved_unpack" && layout != "f16_tiles") {
      getOperation().emitError() << "layout must be auto, interleaved_unpack or f16_tiles, got '" << layout << "'";
      return signalPassFailure();
    }
    llvm::SmallVector<llm::LinearOp> linears;
    getOperation().walk([&](llm::LinearOp op) {
      if (!op.getFallback()) linears.push_back(op);
    });
    IRRewriter rw(&getContext());
    for (llm::LinearOp op : linears)
      if (failed(lower(op, *target, rw))) return signalPassFailure();
  }

  // interleaved_unpack unless the cost model prices pre-dequantized f16 tiles strictly lower.
  StringRef chooseLayout(llm::LinearOp op, int64_t rows, int64_t in, int64_t out, const tandem::npu::TargetModel& t) {
    if (op.getQuant() == "f16") return "f16_tiles";
    if (layout != "auto") return layout;
    const StringRef df = *op.getDataflow();
    const auto blocks = libraryCycles(matmulSpec(rows, in, out, *weightFormat(op.getQuant()), df), t);
    const auto tiles = libraryCycles(matmulSpec(rows, in, out, DType::F16, df), t);
    return tiles && (!blocks || *tiles < *blocks) ? "f16_tiles" : "interleaved_unpack";
  }

  LogicalResult lower(llm::LinearOp op, const tandem::npu::TargetModel& t, IRRewriter& rw) {
    if (!op.getPhase() || !op.getDataflow())
      return op.emitError("has no phase/dataflow: run llm-specialize-phase before llm-to-state");
    auto x = llvm::cast<RankedTensorType>(op.getInput().getType());
    auto w = llvm::cast<RankedTensorType>(op.getWeight().getType());
    const int64_t rows = x.getDimSize(0), in = x.getDimSize(1), out = w.getDimSize(0);
    const int64_t tile = t.matrix.tile_dim;
    const StringRef chosen = chooseLayout(op, rows, in, out, t);
    const StringRef element = chosen == "f16_tiles" ? StringRef("f16") : op.getQuant();
    rw.setInsertionPoint(op);
    const int64_t bytes = state::WeightPackOp::packBytes(out, in, element, tile);
    auto packType = RankedTensorType::get({bytes}, rw.getIntegerType(8));
    auto pack = rw.create<state::WeightPackOp>(op.getLoc(), packType, op.getWeight(), op.getQuantAttr(),
                                               rw.getStringAttr(chosen), rw.getI64IntegerAttr(tile));
    auto mm = rw.create<state::MatmulOp>(op.getLoc(), op.getResult().getType(), op.getInput(), pack.getPack(),
                                         rw.getI64IntegerAttr(out), rw.getStringAttr(element), rw.getI64IntegerAttr(tile),
                                         op.getDataflowAttr(), op.getPhaseAttr());
    rw.replaceOp(op, mm.getResult());
    return success();
  }
};

}  // namespace
}  // namespace tandem::ir
