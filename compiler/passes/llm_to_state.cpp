// llm-to-state: a linear becomes a weight pack (layout chosen on the target) and a state.matmul;
// a KV append becomes the cache's pages (layout and page size chosen on the target for the
// append's phase) and a state.kv_write.
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "npu/cost_model.h"
#include "npu/oplib/kv_cache.h"
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
    if (kvLayout != "auto" && !tandem::npu::oplib::kv_layout_from_name(kvLayout)) {
      getOperation().emitError() << "kv-layout must be auto, token_major or head_major, got '" << kvLayout << "'";
      return signalPassFailure();
    }
    llvm::SmallVector<llm::KvAppendOp> appends;
    getOperation().walk([&](llm::KvAppendOp op) {
      if (!op.getFallback()) appends.push_back(op);
    });
    IRRewriter rw(&getContext());
    for (llm::LinearOp op : linears)
      if (failed(lower(op, *target, rw))) return signalPassFailure();
    for (llm::KvAppendOp op : appends)
      if (failed(lowerKv(op, *target, rw))) return signalPassFailure();
  }

  // The cache's heads: from the attention that reads it (keys or values), else one head.
  static std::pair<int64_t, int64_t> kvHeads(llm::KvAppendOp op, int64_t width) {
    for (Operation* user : op.getResult().getUsers())
      if (auto at = dyn_cast<llm::AttentionOp>(user))
        if (at.getNumKvHeads() * at.getHeadDim() == uint64_t(width)) return {int64_t(at.getNumKvHeads()), int64_t(at.getHeadDim())};
    return {1, width};
  }

  LogicalResult lowerKv(llm::KvAppendOp op, const tandem::npu::TargetModel& t, IRRewriter& rw) {
    namespace oplib = tandem::npu::oplib;
    if (!op.getPhase()) return op.emitError("has no phase: run llm-specialize-phase before llm-to-state");
    auto cache = llvm::cast<RankedTensorType>(op.getCache().getType());
    auto rows = llvm::cast<RankedTensorType>(op.getRows().getType());
    const auto [heads, headDim] = kvHeads(op, cache.getDimSize(1));
    oplib::KvGeometry g;
    g.capacity = uint32_t(cache.getDimSize(0));
    g.heads = uint32_t(heads);
    g.head_dim = uint32_t(headDim);
    g.page_tokens = oplib::choose_page_tokens(g.head_dim, g.capacity, t);
    // This phase's traffic: the append, and attention reading the context: a prefill variant
    // serves a prompt (its attention reads the rows it appends), decode reads up to the whole cache.
    const uint32_t appended = uint32_t(rows.getDimSize(0));
    const uint32_t context = *op.getPhase() == "decode" ? g.capacity : appended;
    const oplib::KvLayout layout = kvLayout == "auto"
        ? oplib::choose_kv_layout(g, appended, context, tandem::npu::CostModel(t))
        : *oplib::kv_layout_from_name(kvLayout);
    const int64_t pages = (g.capacity + g.page_tokens - 1) / g.page_tokens;
    rw.setInsertionPoint(op);
    auto kv = rw.create<state::KvPagesOp>(op.getLoc(), cache, op.getCache(), rw.getI64IntegerAttr(pages),
                                          rw.getI64IntegerAttr(g.page_tokens), rw.getI64IntegerAttr(cache.getDimSize(1)),
                                          rw.getI64IntegerAttr(heads), rw.getStringAttr(oplib::kv_layout_name(layout)));
    auto write = rw.create<state::KvWriteOp>(op.getLoc(), cache, kv.getCache(), op.getRows(), op.getOffset(),
                                             op.getPhaseAttr());
    rw.replaceOp(op, write.getResult());
    return success();
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
    if (auto cluster = op->getAttr("cluster")) mm->setAttr("cluster", cluster);  // state-to-tdma fuses within a cluster
    rw.replaceOp(op, mm.getResult());
    return success();
  }
};

}  // namespace
}  // namespace tandem::ir
