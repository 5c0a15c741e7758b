// tdma-to-npu: each tiled matmul loop becomes an npu.program (its instruction stream, emitted by
// the runtime operator library's emitter at the allocator's addresses) and an npu.launch; each
// DMA kernel (the transfers and waits state-to-tdma tagged with one tdma.kernel, a KV append)
// becomes a program of the same transfers, instruction for instruction, and a launch; each
// tdma.vector_rows becomes the operator library's row program inside its placed region; each
// tdma.norm_linear becomes one fused program (npu/oplib/norm_linear.h) launched with a result per
// projection.
#include "dialects/npu/ProgramConversion.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/MapVector.h"
#include "passes/Passes.h"
#include "passes/tensor_bytes.h"
#include "npu/oplib/elementwise.h"
#include "npu/oplib/norm_linear.h"
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
    llvm::SmallVector<tdma::NormLinearOp> fusedOps;
    getOperation().walk([&](tdma::NormLinearOp op) { fusedOps.push_back(op); });
    llvm::DenseMap<Operation*, int> fusedPerFunction;
    for (tdma::NormLinearOp op : fusedOps) {
      auto f = op->getParentOfType<func::FuncOp>();
      const std::string name = (f ? f.getSymName().str() : std::string("module")) + "_nl" + std::to_string(fusedPerFunction[f]++);
      if (failed(lowerNormLinear(op, name, *target, rw, symbols))) return signalPassFailure();
    }
    llvm::SmallVector<tdma::VectorRowsOp> vectorOps;
    getOperation().walk([&](tdma::VectorRowsOp op) { vectorOps.push_back(op); });
    llvm::DenseMap<Operation*, int> vecPerFunction;
    for (tdma::VectorRowsOp op : vectorOps) {
      auto f = op->getParentOfType<func::FuncOp>();
      const std::string name = (f ? f.getSymName().str() : std::string("module")) + "_" + op.getOp().str() +
                               std::to_string(vecPerFunction[f]++);
      if (failed(lowerVector(op, name, *target, rw, symbols))) return signalPassFailure();
    }
    // DMA kernels (tags are unique in the module), in program order of their first op.
    llvm::MapVector<StringAttr, llvm::SmallVector<Operation*>> kernels;
    getOperation().walk([&](Operation* op) {
      if (auto k = op->getAttrOfType<StringAttr>("tdma.kernel")) kernels[k].push_back(op);
    });
    llvm::DenseMap<Operation*, int> kvPerFunction;
    for (auto& [tag, ops] : kernels) {
      auto f = ops.front()->getParentOfType<func::FuncOp>();
      const std::string name = (f ? f.getSymName().str() : std::string("module")) + "_kv" + std::to_string(kvPerFunction[f]++);
      if (failed(lowerKernel(ops, name, *target, rw, symbols))) return signalPassFailure();
    }
    // The loops and kernels were the allocations' only users.
    llvm::SmallVector<tdma::AllocOp> allocs;
    getOperation().walk([&](tdma::AllocOp a) {
      if (a->use_empty()) allocs.push_back(a);
    });
    for (tdma::AllocOp a : allocs) rw.eraseOp(a);
  }

  // Names, checks against the device and appends an emitted program to the module (the symbol
  // table renames it on a clash; launches use the final name).
  FailureOr<npu::ProgramOp> addProgram(Operation* op, tandem::npu::Program& program, const std::string& name,
                                       const tandem::npu::TargetModel& t, IRRewriter& rw, SymbolTable& symbols) {
    program.name = name;
    if (auto st = tandem::npu::verify(program, t); !st.ok())
      return op->emitError() << "emitted program fails the device check: " << st.message();
    rw.setInsertionPointToEnd(getOperation().getBody());
    npu::ProgramOp prog = npu::buildProgramOp(rw, op->getLoc(), program);
    symbols.insert(prog);
    return prog;
  }

  // The operator library's row program inside the region the allocator placed.
  LogicalResult lowerVector(tdma::VectorRowsOp op, const std::string& name, const tandem::npu::TargetModel& t,
                            IRRewriter& rw, SymbolTable& symbols) {
    auto region = op.getBuffer().getDefiningOp<tdma::AllocOp>();
    if (!region.getOffset()) return op.emitError("TCM buffers are not placed: run tdma-allocate-tcm before tdma-to-npu");
    auto a = llvm::cast<RankedTensorType>(op.getA().getType());
    const auto elt = *tandem::npu::oplib::elt_op_from_name(op.getOp());
    auto program = tandem::npu::oplib::lower_elementwise(
        elt, uint32_t(a.getDimSize(0)), uint32_t(a.getDimSize(1)), t, float(op.getEps().convertToDouble()),
        {uint32_t(*region.getOffset()), uint64_t(region.getBytes())});
    if (!program.ok()) return op.emitError() << "cannot emit: " << program.status().message();
    auto placed = addProgram(op, *program, name, t, rw, symbols);
    if (failed(placed)) return failure();
    npu::ProgramOp prog = *placed;
    prog->setAttr("tandem.elementwise", rw.getDictionaryAttr({
        rw.getNamedAttr("op", op.getOpAttr()),
        rw.getNamedAttr("rows", rw.getI64IntegerAttr(a.getDimSize(0))),
        rw.getNamedAttr("cols", rw.getI64IntegerAttr(a.getDimSize(1))),
        rw.getNamedAttr("eps", op.getEpsAttr()),
        rw.getNamedAttr("est_cycles", op.getEstCyclesAttr()),
    }));
    rw.setInsertionPoint(op);
    auto launch = rw.create<npu::LaunchOp>(op.getLoc(), TypeRange{op.getResult().getType()}, prog.getSymName(),
                                           ValueRange{op.getA(), op.getB()});
    rw.replaceOp(op, launch->getResult(0));
    return success();
  }

  LogicalResult lowerKernel(llvm::ArrayRef<Operation*> ops, const std::string& name, const tandem::npu::TargetModel& t,
                            IRRewriter& rw, SymbolTable& symbols) {
    namespace tn = tandem::npu;
    Location loc = ops.front()->getLoc();
    llvm::SmallVector<Value> read;  // DDR tensors the kernel only loads from, in first-use order
    Value written;                  // the one it stores into (updated in place)
    uint64_t writtenEnd = 0;
    DictionaryAttr kv;
    uint32_t events = 0;
    struct Pending { tn::Instr instr; Value tensor; };
    std::vector<Pending> code;
    for (Operation* op : ops) {
      if (auto d = dyn_cast<tdma::DmaStartOp>(op)) {
        if (auto k = d->getAttrOfType<DictionaryAttr>("tdma.kv")) kv = k;
        auto a = d.getBuffer().getDefiningOp<tdma::AllocOp>();
        if (!a.getOffset()) return d.emitError("TCM buffers are not placed: run tdma-allocate-tcm before tdma-to-npu");
        tn::DmaArgs args;
        args.ddr_offset = uint64_t(d.getDdrOffset());
        args.ddr_stride = uint64_t(d.getDdrStride());
        args.rows = uint32_t(d.getRows());
        args.row_bytes = uint32_t(d.getRowBytes());
        args.tcm = uint32_t(*a.getOffset() + d.getTcmOffset());
        args.tcm_stride = uint32_t(d.getTcmStride());
        args.event = uint32_t(d.getEvent());
        events = std::max(events, args.event + 1);
        const bool store = d.getDirection() == "store";
        if (store) {
          if (written && written != d.getTensor())
            return d.emitError("a DMA kernel stores into one DDR tensor; this one stores into a second");
          written = d.getTensor();
          writtenEnd = std::max(writtenEnd, args.ddr_offset + uint64_t(args.rows - 1) * args.ddr_stride + args.row_bytes);
        } else if (!llvm::is_contained(read, d.getTensor())) {
          read.push_back(d.getTensor());
        }
        code.push_back({store ? tn::Instr::dma_store(args) : tn::Instr::dma_load(args), d.getTensor()});
      } else if (auto w = dyn_cast<tdma::DmaWaitOp>(op)) {
        events = std::max(events, uint32_t(w.getEvent()) + 1);
        code.push_back({tn::Instr::wait(uint32_t(w.getEvent())), Value()});
      } else if (auto sig = dyn_cast<tdma::SignalOp>(op)) {
        uint8_t units = 0;
        for (Attribute u : sig.getUnits()) {
          StringRef n = llvm::cast<StringAttr>(u).getValue();
          units |= n == "dma" ? tn::kUnitDma : n == "matrix" ? tn::kUnitMatrix : tn::kUnitVector;
        }
        events = std::max(events, uint32_t(sig.getEvent()) + 1);
        code.push_back({tn::Instr::signal(uint32_t(sig.getEvent()), units), Value()});
      } else {
        return op->emitError("not a DMA kernel op (dma_start, dma_wait, signal) but tagged tdma.kernel");
      }
    }
    if (!written) return ops.front()->emitError("a DMA kernel must store into a DDR tensor");
    if (llvm::is_contained(read, written)) return ops.front()->emitError("a DMA kernel loads from the tensor it stores into");
    // Buffers: the tensors read, then the one written (bound at its window: the bytes it touches).
    tn::Program program;
    program.name = name;
    for (size_t i = 0; i < read.size(); ++i)
      program.add_buffer(kv && read.size() == 1 ? "rows" : "in" + std::to_string(i), tensorBytes(read[i]), false);
    const uint32_t out = program.add_buffer(kv ? "cache" : "out", writtenEnd, true);
    program.num_events = events;
    for (Pending& p : code) {
      if (p.tensor) p.instr.dma.buffer = p.tensor == written ? out : uint32_t(llvm::find(read, p.tensor) - read.begin());
      program.emit(p.instr);
    }
    if (auto st = tn::verify(program, t); !st.ok())
      return ops.front()->emitError() << "DMA kernel fails the device check: " << st.message();

    rw.setInsertionPointToEnd(getOperation().getBody());
    npu::ProgramOp prog = npu::buildProgramOp(rw, loc, program);
    symbols.insert(prog);
    if (kv) prog->setAttr("tandem.kv", kv);
    rw.setInsertionPointAfter(ops.back());
    llvm::SmallVector<Value> args(read.begin(), read.end());
    args.push_back(written);
    auto launch = rw.create<npu::LaunchOp>(loc, TypeRange{written.getType()}, prog.getSymName(), args);
    // Readers after the launch read the updated cache.
    llvm::SmallPtrSet<Operation*, 16> group(ops.begin(), ops.end());
    written.replaceUsesWithIf(launch->getResult(0), [&](OpOperand& use) {
      Operation* user = launch->getBlock()->findAncestorOpInBlock(*use.getOwner());
      return user && user != launch && !group.count(user) && launch->isBeforeInBlock(user);
    });
    for (Operation* op : llvm::reverse(ops)) rw.eraseOp(op);
    return success();
  }

  // The plan's addresses are the allocator's, in the matmul schedule's buffer order (then, for a
  // fused norm, the gain row and the scalar slot).
  static LogicalResult placePlan(Operation* op, ValueRange buffers, const tandem::npu::oplib::MatmulSpec& spec,
                                 tandem::npu::oplib::MatmulPlan& plan) {
    llvm::SmallVector<uint32_t> at;
    for (Value b : buffers) {
      auto a = b.getDefiningOp<tdma::AllocOp>();
      if (!a.getOffset()) return op->emitError("TCM buffers are not placed: run tdma-allocate-tcm before tdma-to-npu");
      at.push_back(uint32_t(*a.getOffset()));
    }
    size_t i = 0;
    plan.x_addr = at[i++];
    plan.y_addr[0] = at[i++];
    if (spec.double_buffer_out) plan.y_addr[1] = at[i++];
    plan.w_addr[0] = at[i++];
    if (spec.double_buffer) plan.w_addr[1] = at[i++];
    if (spec.wtype != DType::F16) {
      plan.u_addr[0] = at[i++];
      if (spec.double_buffer) plan.u_addr[1] = at[i++];
    }
    if (i + 2 == at.size()) {
      plan.g_addr = at[i++];
      plan.s_addr = at[i++];
    }
    return success();
  }

  LogicalResult lowerNormLinear(tdma::NormLinearOp op, const std::string& name, const tandem::npu::TargetModel& t,
                                IRRewriter& rw, SymbolTable& symbols) {
    auto x = llvm::cast<RankedTensorType>(op.getInput().getType());
    oplib::NormLinearSpec spec;
    spec.base = matmulSpec(x.getDimSize(0), x.getDimSize(1), 1, *weightFormat(op.getFormat()), op.getOrder(),
                           op.getDoubleBuffer(), op.getDoubleBufferOut());
    if (auto a = op->getAttrOfType<IntegerAttr>("arrays")) spec.base.arrays = uint32_t(a.getInt());
    llvm::SmallVector<Attribute> outs;
    for (Value r : op.getResults()) {
      spec.outs.push_back(uint32_t(llvm::cast<RankedTensorType>(r.getType()).getDimSize(1)));
      outs.push_back(rw.getI64IntegerAttr(spec.outs.back()));
    }
    spec.eps = float(op.getEps().convertToDouble());
    auto plan = oplib::block_norm_linear(spec, t, uint32_t(op.getNBlock()), uint32_t(op.getSlabOut()), uint32_t(op.getSlabIn()));
    if (!plan.ok()) return op.emitError() << "invalid tiling: " << plan.status().message();
    if (failed(placePlan(op, op.getBuffers(), spec.base, *plan))) return failure();
    auto program = oplib::emit_norm_linear(spec, *plan, t);
    if (!program.ok()) return op.emitError() << "cannot emit: " << program.status().message();
    auto placed = addProgram(op, *program, name, t, rw, symbols);
    if (failed(placed)) return failure();
    npu::ProgramOp prog = *placed;
    prog->setAttr("tandem.norm_linear", rw.getDictionaryAttr({
        rw.getNamedAttr("rows", rw.getI64IntegerAttr(spec.base.n)),
        rw.getNamedAttr("in", rw.getI64IntegerAttr(spec.base.in)),
        rw.getNamedAttr("outs", rw.getArrayAttr(outs)),
        rw.getNamedAttr("eps", op.getEpsAttr()),
        rw.getNamedAttr("format", op.getFormatAttr()),
        rw.getNamedAttr("order", op.getOrderAttr()),
        rw.getNamedAttr("double_buffer", op.getDoubleBufferAttr()),
        rw.getNamedAttr("double_buffer_out", op.getDoubleBufferOutAttr()),
        rw.getNamedAttr("est_cycles", op.getEstCyclesAttr()),
        rw.getNamedAttr("arrays", rw.getI64IntegerAttr(oplib::matmul_arrays(spec.base, t))),
    }));
    rw.setInsertionPoint(op);
    llvm::SmallVector<Value> args{op.getInput(), op.getGain()};
    llvm::append_range(args, op.getPacks());  // the program's y_i buffers are the launch's results
    auto launch = rw.create<npu::LaunchOp>(op.getLoc(), op.getResultTypes(), prog.getSymName(), args);
    rw.replaceOp(op, launch.getResults());
    return success();
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
    if (failed(placePlan(op, op.getBuffers(), spec, *plan))) return failure();
    auto program = oplib::emit_matmul(spec, *plan, t);
    if (!program.ok()) return op.emitError() << "cannot emit: " << program.status().message();
    auto placed = addProgram(op, *program, name, t, rw, symbols);
    if (failed(placed)) return failure();
    npu::ProgramOp prog = *placed;
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
    auto launch = rw.create<npu::LaunchOp>(op.getLoc(), TypeRange{op.getResult().getType()}, prog.getSymName(),
                                           ValueRange{op.getInput(), op.getPack()});
    rw.replaceOp(op, launch->getResult(0));
    return success();
  }
};

}  // namespace
}  // namespace tandem::ir
