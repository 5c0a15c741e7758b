// tdma-to-npu: each tiled matmul loop becomes an npu.program (its instruction stream, emitted by
// the runtime operator library's emitter at the allocator's addresses) and an npu.launch.
#include "dialects/npu/ProgramConversion.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/Passes.h"
#include "passes/matmul_spec.h"
#include "passes/target_option.h"

namespace tandem::ir {
#define GEN_PASS_DEF_TDMATONPU
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

namespace oplib = tandem::npu::oplib;

struct TdmaToNpuPass : impl::TdmaToNpuBase<TdmaToNpuPass> {
  using TdmaToNpuBase::TdmaToNpuBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    llvm::SmallVector<tdma::MatmulTilesOp> loops;
    getOperation().walk([&](tdma::MatmulTilesOp op) { loops.push_back(op); });
    IRRewriter rw(&getContext());
    SymbolTable symbols(getOperation());
    llvm::DenseMap<Operation*, int> perFunction;
    for (tdma::MatmulTilesOp op : loops) {
      auto f = op->getParentOfType<func::FuncOp>();
      const std::string name = (f ? f.getSymName().str() : std::string("module")) + "_mm" + std::to_string(perFunction[f]++);
      if (failed(lower(op, name, *target, rw, symbols))) return signalPassFailure();
    }
    // The loops were the allocations' only users.
    llvm::SmallVector<tdma::AllocOp> allocs;
    getOperation().walk([&](tdma::AllocOp a) {
      if (a->use_empty()) allocs.push_back(a);
    });
    for (tdma::AllocOp a : allocs) rw.eraseOp(a);
  }

  LogicalResult lower(tdma::MatmulTilesOp op, const std::string& name, const tandem::npu::TargetModel& t, IRRewriter& rw,
                      SymbolTable& symbols) {
    auto x = llvm::cast<RankedTensorType>(op.getInput().getType());
    auto y = llvm::cast<RankedTensorType>(op.getResult().getType());
    auto spec = matmulSpec(x.getDimSize(0), x.getDimSize(1), y.getDimSize(1), *weightFormat(op.getFormat()),
                                 op.getOrder(), op.getDoubleBuffer(), op.getDoubleBufferOut());
    if (auto a = op->getAttrOfType<IntegerAttr>("arrays")) spec.arrays = uint32_t(a.getInt());
    auto plan = oplib::block_matmul(spec, t, uint32_t(op.getNBlock()), uint32_t(op.getSlabOut()), uint32_t(op.getSlabIn()));
    if (!plan.ok()) return op.emitError() << "invalid tiling: " << plan.status().message();
    // The plan's addresses are the allocator's, in the loop's buffer order.
    llvm::SmallVector<uint32_t> at;
    for (Value b : op.getBuffers()) {
      auto a = b.getDefiningOp<tdma::AllocOp>();
      if (!a.getOffset()) return op.emitError("TCM buffers are not placed: run tdma-allocate-tcm before tdma-to-npu");
      at.push_back(uint32_t(*a.getOffset()));
    }
    size_t i = 0;
    plan->x_addr = at[i++];
    plan->y_addr[0] = at[i++];
    if (spec.double_buffer_out) plan->y_addr[1] = at[i++];
    plan->w_addr[0] = at[i++];
    if (spec.double_buffer) plan->w_addr[1] = at[i++];
    if (spec.wtype != DType::F16) {
      plan->u_addr[0] = at[i++];
      if (spec.double_buffer) plan->u_addr[1] = at[i++];
    }
    auto program = oplib::emit_matmul(spec, *plan, t);
    if (!program.ok()) return op.emitError() << "cannot emit: " << program.status().message();
    program->name = name;
    if (auto st = tandem::npu::verify(*program, t); !st.ok())
      return op.emitError() << "emitted program fails the device check: " << st.message();

    auto module = getOperation();
    rw.setInsertionPointToEnd(module.getBody());
    npu::ProgramOp prog = npu::buildProgramOp(rw, op.getLoc(), *program);
    symbols.insert(prog);  // renames on a clash; the launch below uses the final name
    // What the runtime needs to bind and pack the operands.
    prog->setAttr("tandem.matmul", rw.getDictionaryAttr({
        rw.getNamedAttr("rows", rw.getI64IntegerAttr(spec.n)),
        rw.getNamedAttr("in", rw.getI64IntegerAttr(spec.in)),
        rw.getNamedAttr("out", rw.getI64IntegerAttr(spec.out)),
        rw.getNamedAttr("format", op.getFormatAttr()),
        rw.getNamedAttr("order", op.getOrderAttr()),
        rw.getNamedAttr("double_buffer", op.getDoubleBufferAttr()),
        rw.getNamedAttr("double_buffer_out", op.getDoubleBufferOutAttr()),
        rw.getNamedAttr("est_cycles", op.getEstCyclesAttr()),
        rw.getNamedAttr("arrays", rw.getI64IntegerAttr(tandem::npu::oplib::matmul_arrays(spec, t))),
    }));
    rw.setInsertionPoint(op);
    auto launch = rw.create<npu::LaunchOp>(op.getLoc(), op.getResult().getType(), prog.getSymName(),
                                           ValueRange{op.getInput(), op.getPack()});
    rw.replaceOp(op, launch.getResult());
    return success();
  }
};

}  // namespace
}  // namespace tandem::ir
