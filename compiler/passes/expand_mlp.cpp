// llm-expand-mlp: llm.mlp -> linear (gate), linear (up), swiglu, linear (down).
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace tandem::ir {
#define GEN_PASS_DEF_LLMEXPANDMLP
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

struct ExpandMlp : OpRewritePattern<llm::MlpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::MlpOp op, PatternRewriter& rw) const override {
    auto x = llvm::cast<RankedTensorType>(op.getInput().getType());
    auto wg = llvm::cast<RankedTensorType>(op.getWGate().getType());
    auto hidden = RankedTensorType::get({x.getDimSize(0), wg.getDimSize(0)}, x.getElementType());
    auto linear = [&](Value in, Value w, Type t) {
      return rw.create<llm::LinearOp>(op.getLoc(), t, in, w, op.getQuantAttr(), op.getPhaseAttr(), StringAttr(),
                                      StringAttr());
    };
    auto gate = linear(op.getInput(), op.getWGate(), hidden);
    auto up = linear(op.getInput(), op.getWUp(), hidden);
    auto act = rw.create<llm::SwigluOp>(op.getLoc(), hidden, gate.getResult(), up.getResult(), op.getPhaseAttr(),
                                        op.getFallbackAttr());
    auto down = linear(act.getResult(), op.getWDown(), op.getResult().getType());
    rw.replaceOp(op, down.getResult());
    return success();
  }
};

struct ExpandMlpPass : impl::LlmExpandMlpBase<ExpandMlpPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandMlp>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace
}  // namespace tandem::ir
