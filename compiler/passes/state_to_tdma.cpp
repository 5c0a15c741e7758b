// state-to-tdma: tiling, double buffering (asymmetric when TCM is short) and the TCM buffers of
// every state.matmul, chosen by the tiling search on the shared cost model.
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/Passes.h"
#include "passes/matmul_spec.h"
#include "passes/target_option.h"
#include "passes/tiling_search.h"

namespace tandem::ir {
#define GEN_PASS_DEF_STATETOTDMA
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

struct StateToTdmaPass : impl::StateToTdmaBase<StateToTdmaPass> {
  using StateToTdmaBase::StateToTdmaBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    auto budget = budgetBytes(tcmBudget, *target, getOperation());
    if (failed(budget)) return signalPassFailure();
    Buffering mode;
    if (buffering == "auto") mode = Buffering::kAuto;
    else if (buffering == "double") mode = Buffering::kDouble;
    else if (buffering == "single") mode = Buffering::kSingle;
    else {
      getOperation().emitError() << "buffering must be auto, double or single, got '" << buffering << "'";
      return signalPassFailure();
    }
    llvm::SmallVector<state::MatmulOp> matmuls;
    getOperation().walk([&](state::MatmulOp op) { matmuls.push_back(op); });
    IRRewriter rw(&getContext());
    for (state::MatmulOp op : matmuls)
      if (failed(lower(op, *target, *budget, mode, rw))) return signalPassFailure();
  }

  LogicalResult lower(state::MatmulOp op, const tandem::npu::TargetModel& t, uint64_t budget, Buffering mode,
                      IRRewriter& rw) {
    if (int64_t(op.getTile()) != t.matrix.tile_dim)
      return op.emitError() << "packed for tile " << int64_t(op.getTile()) << " but target " << t.name << " has tile "
                            << t.matrix.tile_dim;
    auto x = llvm::cast<RankedTensorType>(op.getInput().getType());
    auto base = matmulSpec(x.getDimSize(0), x.getDimSize(1), int64_t(op.getOut()), *weightFormat(op.getFormat()),
                           op.getOrder());
    std::string why;
    if (powerCap < 0) return op.emitError() << "power-cap must be >= 0, got " << double(powerCap);
    auto choice = searchTiling(base, t, budget, powerCap, mode, why);
    if (!choice) return op.emitError() << "cannot tile for " << t.name << ": " << why;
    const auto& p = choice->plan;
    const auto bytes = tandem::npu::oplib::matmul_buffer_bytes(choice->spec, p);
    rw.setInsertionPoint(op);
    llvm::SmallVector<Value> buffers;
    auto alloc = [&](uint64_t n, StringRef role) {
      buffers.push_back(rw.create<tdma::AllocOp>(op.getLoc(), rw.getIndexType(), rw.getI64IntegerAttr(int64_t(n)),
                                                 rw.getI64IntegerAttr(t.tcm.alignment_bytes), rw.getStringAttr(role),
                                                 IntegerAttr()));
    };
    alloc(bytes.x, "x");
    alloc(bytes.y, "y0");
    if (choice->spec.double_buffer_out) alloc(bytes.y, "y1");
    alloc(bytes.w, "w0");
    if (choice->spec.double_buffer) alloc(bytes.w, "w1");
    if (bytes.u > 0) {
      alloc(bytes.u, "u0");
      if (choice->spec.double_buffer) alloc(bytes.u, "u1");
    }
    auto tiles = rw.create<tdma::MatmulTilesOp>(
        op.getLoc(), op.getResult().getType(), op.getInput(), op.getPack(), buffers, op.getFormatAttr(),
        op.getOrderAttr(), rw.getI64IntegerAttr(p.nb), rw.getI64IntegerAttr(p.R), rw.getI64IntegerAttr(p.kc),
        rw.getBoolAttr(choice->spec.double_buffer), rw.getBoolAttr(choice->spec.double_buffer_out),
        rw.getF64FloatAttr(choice->cycles));
    tiles->setAttr("phase", op.getPhaseAttr());
    tiles->setAttr("arrays", rw.getI64IntegerAttr(tandem::npu::oplib::matmul_arrays(choice->spec, t)));
    tiles->setAttr("est_power_w", rw.getF64FloatAttr(choice->power_w));
    rw.replaceOp(op, tiles.getResult());
    return success();
  }
};

}  // namespace
}  // namespace tandem::ir
