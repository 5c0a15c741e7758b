#include "dialects/npu/ProgramConversion.h"

#include <limits>

namespace tandem::ir::npu {

using namespace mlir;
namespace dev = tandem::npu;

namespace {

IntegerAttr i64(OpBuilder& b, uint64_t v) { return b.getI64IntegerAttr(int64_t(v)); }

void buildInstr(OpBuilder& b, Location loc, const dev::Instr& in) {
  switch (in.op) {
    case dev::Opcode::kDmaLoad:
    case dev::Opcode::kDmaStore: {
      const dev::DmaArgs& d = in.dma;
      auto args = std::make_tuple(i64(b, d.buffer), i64(b, d.ddr_offset), i64(b, d.ddr_stride), i64(b, d.rows),
                                  i64(b, d.row_bytes), i64(b, d.tcm), i64(b, d.tcm_stride), i64(b, d.event));
      if (in.op == dev::Opcode::kDmaLoad)
        std::apply([&](auto... a) { b.create<DmaLoadOp>(loc, a...); }, args);
      else
        std::apply([&](auto... a) { b.create<DmaStoreOp>(loc, a...); }, args);
      return;
    }
    case dev::Opcode::kMma: {
      const dev::MmaArgs& m = in.mma;
      b.create<MmaOp>(loc, i64(b, m.unit), i64(b, m.a), i64(b, m.lda), i64(b, m.b), i64(b, m.ldb), i64(b, m.c),
                      i64(b, m.ldc), b.getBoolAttr(m.acc), b.getBoolAttr(m.tb), b.getBoolAttr(m.tc));
      return;
    }
    case dev::Opcode::kVec: {
      const dev::VecArgs& v = in.vec;
      const std::string_view name = dev::vec_op_name(v.op);
      b.create<VecOp>(loc, b.getStringAttr(StringRef(name.data(), name.size())), i64(b, v.dst), i64(b, v.a), i64(b, v.b),
                      i64(b, v.c), i64(b, v.n), b.getF32FloatAttr(v.imm0), b.getF32FloatAttr(v.imm1));
      return;
    }
    case dev::Opcode::kWait: b.create<WaitOp>(loc, i64(b, in.sync.event)); return;
    case dev::Opcode::kSignal: b.create<SignalOp>(loc, i64(b, in.sync.event), i64(b, in.sync.units)); return;
    case dev::Opcode::kBarrier: b.create<BarrierOp>(loc); return;
  }
}

// Reads an attribute value into a Program field, failing when it does not fit.
template <class T>
LogicalResult field(Operation* op, StringRef name, uint64_t value, T& out) {
  if (int64_t(value) < 0 || value > uint64_t(std::numeric_limits<T>::max()))
    return op->emitOpError() << name << " = " << int64_t(value) << " does not fit the Program format";
  out = T(value);
  return success();
}

}  // namespace

ProgramOp buildProgramOp(OpBuilder& b, Location loc, const dev::Program& p) {
  auto prog = b.create<ProgramOp>(loc, b.getStringAttr(p.name), i64(b, p.num_events));
  Block* body = new Block();
  prog.getBody().push_back(body);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(body);
  for (const dev::BufferDecl& d : p.buffers) b.create<BufferOp>(loc, b.getStringAttr(d.name), i64(b, d.bytes), b.getBoolAttr(d.writable));
  for (const dev::Instr& in : p.code) buildInstr(b, loc, in);
  return prog;
}

FailureOr<dev::Program> toProgram(ProgramOp op) {
  dev::Program p;
  p.name = op.getSymName().str();
  if (failed(field(op, "events", op.getEvents(), p.num_events))) return failure();
  // A 4096-row program has millions of instructions: grow the vector once, not by doubling.
  p.code.reserve(op.getBody().front().getOperations().size());
  for (Operation& o : op.getBody().front()) {
    bool ok = true;
    auto f = [&](StringRef n, uint64_t v, auto& out) { ok = ok && succeeded(field(&o, n, v, out)); };
    if (auto b = dyn_cast<BufferOp>(o)) {
      p.buffers.push_back({b.getName().str(), b.getBytes(), b.getWritable()});
    } else if (isa<DmaLoadOp, DmaStoreOp>(o)) {
      dev::DmaArgs d;
      auto fill = [&](auto dma) {
        f("buffer", dma.getBuffer(), d.buffer);
        f("ddr_offset", dma.getDdrOffset(), d.ddr_offset);
        f("ddr_stride", dma.getDdrStride(), d.ddr_stride);
        f("rows", dma.getRows(), d.rows);
        f("row_bytes", dma.getRowBytes(), d.row_bytes);
        f("tcm", dma.getTcm(), d.tcm);
        f("tcm_stride", dma.getTcmStride(), d.tcm_stride);
        f("event", dma.getEvent(), d.event);
      };
      if (auto l = dyn_cast<DmaLoadOp>(o)) {
        fill(l);
        p.emit(dev::Instr::dma_load(d));
      } else {
        fill(cast<DmaStoreOp>(o));
        p.emit(dev::Instr::dma_store(d));
      }
    } else if (auto m = dyn_cast<MmaOp>(o)) {
      dev::MmaArgs a;
      f("unit", m.getUnit(), a.unit);
      f("a", m.getA(), a.a);
      f("lda", m.getLda(), a.lda);
      f("b", m.getB(), a.b);
      f("ldb", m.getLdb(), a.ldb);
      f("c", m.getC(), a.c);
      f("ldc", m.getLdc(), a.ldc);
      a.acc = m.getAcc();
      a.tb = m.getTb();
      a.tc = m.getTc();
      p.emit(dev::Instr::matmul(a));
    } else if (auto v = dyn_cast<VecOp>(o)) {
      dev::VecArgs a;
      bool known = false;
      for (int i = 0; i < dev::kNumVecOps; ++i)
        if (dev::vec_op_name(dev::VecOp(i)) == std::string_view(v.getOp().data(), v.getOp().size())) {
          a.op = dev::VecOp(i);
          known = true;
        }
      if (!known) return v.emitOpError() << "unknown vector op \"" << v.getOp() << "\"";
      f("dst", v.getDst(), a.dst);
      f("a", v.getA(), a.a);
      f("b", v.getB(), a.b);
      f("c", v.getC(), a.c);
      f("n", v.getN(), a.n);
      a.imm0 = v.getImm0().convertToFloat();
      a.imm1 = v.getImm1().convertToFloat();
      p.emit(dev::Instr::vector(a));
    } else if (auto w = dyn_cast<WaitOp>(o)) {
      uint32_t e = 0;
      f("event", w.getEvent(), e);
      p.emit(dev::Instr::wait(e));
    } else if (auto s = dyn_cast<SignalOp>(o)) {
      uint32_t e = 0;
      uint8_t u = 0;
      f("event", s.getEvent(), e);
      f("units", s.getUnits(), u);
      p.emit(dev::Instr::signal(e, u));
    } else if (isa<BarrierOp>(o)) {
      p.emit(dev::Instr::barrier());
    } else {
      return o.emitOpError("is not an npu instruction");
    }
    if (!ok) return failure();
  }
  return p;
}

}  // namespace tandem::ir::npu
