// The tdma dialect: registration and verifiers.
#include "dialects/tdma/TdmaDialect.h"

#include "mlir/IR/Builders.h"
#include "npu/program.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace tandem::ir::tdma;

#include "dialects/tdma/TdmaDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/tdma/TdmaOps.cpp.inc"

void TdmaDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/tdma/TdmaOps.cpp.inc"
      >();
}

namespace {
constexpr int64_t kMaxEvents = tandem::npu::kMaxEvents;  // the Program format's limit
}  // namespace

LogicalResult AllocOp::verify() {
  const int64_t bytes = int64_t(getBytes()), align = int64_t(getAlignment());
  if (bytes <= 0) return emitOpError() << "bytes must be positive, got " << bytes;
  if (align <= 0 || (align & (align - 1)) != 0) return emitOpError() << "alignment must be a power of two, got " << align;
  if (auto off = getOffset(); off && int64_t(*off) % align != 0)
    return emitOpError() << "offset " << *off << " is not a multiple of the alignment " << align;
  return success();
}

unsigned MatmulTilesOp::expectedBufferCount() {
  const unsigned w = getDoubleBuffer() ? 2 : 1;
  return 1 + (getDoubleBufferOut() ? 2 : 1) + w + (getFormat() == "f16" ? 0 : w);
}

LogicalResult MatmulTilesOp::verify() {
  if (getFormat() != "f16" && getFormat() != "q8_0" && getFormat() != "q4_0")
    return emitOpError() << "unknown format \"" << getFormat() << "\"";
  if (getOrder() != "weight_stationary" && getOrder() != "activation_stationary")
    return emitOpError() << "unknown order \"" << getOrder() << "\"";
  if (int64_t(getNBlock()) <= 0 || int64_t(getSlabOut()) <= 0 || int64_t(getSlabIn()) <= 0)
    return emitOpError("n_block, slab_out and slab_in must be positive");
  if (getBuffers().size() != expectedBufferCount())
    return emitOpError() << "expects " << expectedBufferCount() << " TCM buffers for this buffering, got "
                         << getBuffers().size();
  for (Value b : getBuffers())
    if (!b.getDefiningOp<AllocOp>()) return emitOpError("every buffer must come from tdma.alloc");
  auto x = llvm::cast<RankedTensorType>(getInput().getType());
  auto y = llvm::cast<RankedTensorType>(getResult().getType());
  if (x.getRank() != 2 || y.getRank() != 2 || x.getDimSize(0) != y.getDimSize(0))
    return emitOpError("input and result must be rank-2 with the same rows");
  return success();
}

LogicalResult VectorRowsOp::verify() {
  if (getOp() != "rmsnorm" && getOp() != "swiglu" && getOp() != "add")
    return emitOpError() << "op must be rmsnorm, swiglu or add, got \"" << getOp() << "\"";
  auto a = llvm::cast<RankedTensorType>(getA().getType()), b = llvm::cast<RankedTensorType>(getB().getType());
  if (a.getRank() != 2 || !a.hasStaticShape()) return emitOpError() << "a must be a static rank-2 tensor, got " << a;
  if (getOp() == "rmsnorm" ? (b.getRank() != 1 || b.getDimSize(0) != a.getDimSize(1)) : b != a)
    return emitOpError() << "b must be " << (getOp() == "rmsnorm" ? "the gain vector of the row width" : "shaped as a")
                         << ", got " << b;
  if (getResult().getType() != a) return emitOpError("result type must equal a's type");
  if (int64_t(getRowsPerChunk()) < 1 || int64_t(getRowsPerChunk()) > a.getDimSize(0))
    return emitOpError() << "rows_per_chunk " << int64_t(getRowsPerChunk()) << " not in 1.." << a.getDimSize(0);
  if (!getBuffer().getDefiningOp<AllocOp>()) return emitOpError("buffer must come from tdma.alloc");
  return success();
}

LogicalResult DmaStartOp::verify() {
  if (getDirection() != "load" && getDirection() != "store")
    return emitOpError() << "direction must be load or store, got " << getDirection();
  if (int64_t(getRows()) <= 0 || int64_t(getRowBytes()) <= 0) return emitOpError("rows and row_bytes must be positive");
  if (int64_t(getTcmStride()) < int64_t(getRowBytes()))
    return emitOpError() << "tcm_stride " << int64_t(getTcmStride()) << " overlaps rows of " << int64_t(getRowBytes())
                         << " bytes";
  if (int64_t(getEvent()) < 0 || int64_t(getEvent()) >= kMaxEvents) return emitOpError("event id out of range");
  auto alloc = getBuffer().getDefiningOp<AllocOp>();
  if (!alloc) return emitOpError("buffer must come from tdma.alloc");
  // Both ends of the transfer stay inside their buffers.
  const int64_t rows = int64_t(getRows()), rowBytes = int64_t(getRowBytes());
  const int64_t tcmEnd = int64_t(getTcmOffset()) + (rows - 1) * int64_t(getTcmStride()) + rowBytes;
  if (int64_t(getTcmOffset()) < 0 || tcmEnd > int64_t(alloc.getBytes()))
    return emitOpError() << "TCM side ends at byte " << tcmEnd << " of a " << int64_t(alloc.getBytes()) << "-byte buffer";
  auto t = llvm::cast<RankedTensorType>(getTensor().getType());
  if (t.hasStaticShape()) {
    const int64_t tensorBytes = t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
    const int64_t ddrEnd = int64_t(getDdrOffset()) + (rows - 1) * int64_t(getDdrStride()) + rowBytes;
    if (int64_t(getDdrOffset()) < 0 || ddrEnd > tensorBytes)
      return emitOpError() << "DDR side ends at byte " << ddrEnd << " of a " << tensorBytes << "-byte tensor";
  }
  return success();
}

LogicalResult DmaWaitOp::verify() {
  if (int64_t(getEvent()) < 0 || int64_t(getEvent()) >= kMaxEvents) return emitOpError("event id out of range");
  return success();
}

LogicalResult SignalOp::verify() {
  if (int64_t(getEvent()) < 0 || int64_t(getEvent()) >= kMaxEvents) return emitOpError("event id out of range");
  if (getUnits().empty()) return emitOpError("needs at least one unit");
  for (Attribute a : getUnits()) {
    StringRef u = llvm::cast<StringAttr>(a).getValue();
    if (u != "dma" && u != "matrix" && u != "vector")
      return emitOpError() << "unknown unit \"" << u << "\" (dma, matrix, vector)";
  }
  return success();
}
