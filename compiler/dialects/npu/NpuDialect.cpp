// The npu dialect: registration and verifiers. The full resource check of a program (TCM bounds
// against a target, waits on events nothing completes into, DDR bounds) is the device's own
// tandem::npu::verify, which npu-export runs on the exported Program; the verifiers here catch
// what is wrong regardless of the target.
#include "dialects/npu/NpuDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "npu/program.h"
#include "npu/target_model.h"

using namespace mlir;
using namespace tandem::ir::npu;

#include "dialects/npu/NpuDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/npu/NpuOps.cpp.inc"

void NpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/npu/NpuOps.cpp.inc"
      >();
}

namespace {
constexpr int64_t kMaxEvents = tandem::npu::kMaxEvents;  // the Program format's limit

template <class DmaOp>
LogicalResult verifyDma(DmaOp op, int64_t buffers, int64_t events, llvm::ArrayRef<bool> writable, bool store) {
  const int64_t b = int64_t(op.getBuffer());
  if (b < 0 || b >= buffers) return op.emitOpError() << "buffer " << b << " is not declared (" << buffers << " buffers)";
  if (store && !writable[size_t(b)]) return op.emitOpError() << "stores into read-only buffer " << b;
  if (int64_t(op.getEvent()) >= events)
    return op.emitOpError() << "event " << int64_t(op.getEvent()) << " >= the program's " << events << " events";
  if (int64_t(op.getRows()) <= 0 || int64_t(op.getRowBytes()) <= 0) return op.emitOpError("rows and row_bytes must be positive");
  return success();
}
}  // namespace

LogicalResult ProgramOp::verify() {
  const int64_t events = int64_t(getEvents());
  if (events <= 0 || events > kMaxEvents) return emitOpError() << "events must be in 1.." << kMaxEvents;
  llvm::SmallVector<bool> writable;
  bool seenInstruction = false;
  for (Operation& op : getBody().front()) {
    if (auto b = llvm::dyn_cast<BufferOp>(op)) {
      if (seenInstruction) return b.emitOpError("buffers must be declared before the first instruction");
      if (int64_t(b.getBytes()) <= 0) return b.emitOpError("bytes must be positive");
      writable.push_back(b.getWritable());
      continue;
    }
    seenInstruction = true;
    const int64_t nbuf = int64_t(writable.size());
    if (auto d = llvm::dyn_cast<DmaLoadOp>(op)) {
      if (failed(verifyDma(d, nbuf, events, writable, false))) return failure();
    } else if (auto d = llvm::dyn_cast<DmaStoreOp>(op)) {
      if (failed(verifyDma(d, nbuf, events, writable, true))) return failure();
    } else if (auto w = llvm::dyn_cast<WaitOp>(op)) {
      if (int64_t(w.getEvent()) >= events) return w.emitOpError() << "event " << int64_t(w.getEvent()) << " out of range";
    } else if (auto s = llvm::dyn_cast<SignalOp>(op)) {
      if (int64_t(s.getEvent()) >= events) return s.emitOpError() << "event " << int64_t(s.getEvent()) << " out of range";
    } else if (!llvm::isa<MmaOp, VecOp, BarrierOp>(op)) {
      return op.emitOpError("is not an npu instruction");
    }
  }
  return success();
}

LogicalResult VecOp::verify() {
  for (int i = 0; i < tandem::npu::kNumVecOps; ++i)
    if (tandem::npu::vec_op_name(tandem::npu::VecOp(i)) == std::string_view(getOp().data(), getOp().size())) {
      if (int64_t(getN()) <= 0) return emitOpError("n must be positive");
      return success();
    }
  return emitOpError() << "unknown vector op \"" << getOp() << "\"";
}

LogicalResult SignalOp::verify() {
  const int64_t u = int64_t(getUnits());
  if (u <= 0 || u > 7) return emitOpError() << "units must be a non-empty mask of 1 (dma), 2 (matrix), 4 (vector); got " << u;
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection& symbols) {
  auto prog = symbols.lookupNearestSymbolFrom<ProgramOp>(*this, getProgramAttr());
  if (!prog) return emitOpError() << "no npu.program named " << getProgramAttr();
  // Buffers come first (ProgramOp::verify); stop at the first instruction rather than walk the
  // millions of a long prefill program for every launch.
  int64_t buffers = 0;
  for (Operation& op : prog.getBody().front()) {
    if (!llvm::isa<BufferOp>(op)) break;
    ++buffers;
  }
  const int64_t args = int64_t(getArgs().size()), results = int64_t(getResults().size());
  if (results == 0) return emitOpError("must have at least one result");
  if (args + results != buffers && !(args == buffers && results == 1))
    return emitOpError() << "binds " << args << " inputs + " << results << " output(s), but " << getProgramAttr()
                         << " declares " << buffers << " buffers";
  if (args == buffers && (args == 0 || getArgs().back().getType() != getResults().front().getType()))
    return emitOpError() << "binds all " << buffers << " buffers of " << getProgramAttr()
                         << ", so it updates the last in place and its result must have the last operand's type";
  return success();
}
