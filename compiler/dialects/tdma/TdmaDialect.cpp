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

namespace {

// TCM buffers of the tiled matmul schedule: x, the output panel(s), the weight slab(s) and, for a
// quantized format, the unpacked slab(s).
unsigned matmulBufferCount(StringRef format, bool doubleBuffer, bool doubleBufferOut) {
  const unsigned w = doubleBuffer ? 2 : 1;
  return 1 + (doubleBufferOut ? 2 : 1) + w + (format == "f16" ? 0 : w);
}

// What tdma.matmul_tiles and tdma.norm_linear share: format, order, blocking, buffers.
LogicalResult verifyMatmulSchedule(Operation* op, StringRef format, StringRef order, int64_t nBlock, int64_t slabOut,
                                   int64_t slabIn, ValueRange buffers, unsigned expected) {
  if (format != "f16" && format != "q8_0" && format != "q4_0")
    return op->emitOpError() << "unknown format \"" << format << "\"";
  if (order != "weight_stationary" && order != "activation_stationary")
    return op->emitOpError() << "unknown order \"" << order << "\"";
  if (nBlock <= 0 || slabOut <= 0 || slabIn <= 0) return op->emitOpError("n_block, slab_out and slab_in must be positive");
  if (buffers.size() != expected)
    return op->emitOpError() << "expects " << expected << " TCM buffers for this buffering, got " << buffers.size();
  for (Value b : buffers)
    if (!b.getDefiningOp<AllocOp>()) return op->emitOpError("every buffer must come from tdma.alloc");
  return success();
}

}  // namespace

unsigned MatmulTilesOp::expectedBufferCount() {
  return matmulBufferCount(getFormat(), getDoubleBuffer(), getDoubleBufferOut());
}

LogicalResult MatmulTilesOp::verify() {
  if (failed(verifyMatmulSchedule(*this, getFormat(), getOrder(), int64_t(getNBlock()), int64_t(getSlabOut()),
                                  int64_t(getSlabIn()), getBuffers(), expectedBufferCount())))
    return failure();
  auto x = llvm::cast<RankedTensorType>(getInput().getType());
  auto y = llvm::cast<RankedTensorType>(getResult().getType());
  if (x.getRank() != 2 || y.getRank() != 2 || x.getDimSize(0) != y.getDimSize(0))
    return emitOpError("input and result must be rank-2 with the same rows");
  return success();
}

LogicalResult NormLinearOp::verify() {
  const unsigned expected = matmulBufferCount(getFormat(), getDoubleBuffer(), getDoubleBufferOut()) + 2;
  if (failed(verifyMatmulSchedule(*this, getFormat(), getOrder(), int64_t(getNBlock()), int64_t(getSlabOut()),
                                  int64_t(getSlabIn()), getBuffers(), expected)))
    return failure();
  if (getPacks().empty()) return emitOpError("needs at least one projection");
  if (getPacks().size() != getResults().size())
    return emitOpError() << "has " << getPacks().size() << " packs but " << getResults().size() << " results";
  auto x = llvm::cast<RankedTensorType>(getInput().getType());
  auto g = llvm::cast<RankedTensorType>(getGain().getType());
  if (x.getRank() != 2 || !x.hasStaticShape()) return emitOpError() << "input must be a static rank-2 tensor, got " << x;
  if (g.getRank() != 1 || g.getDimSize(0) != x.getDimSize(1))
    return emitOpError() << "gain must be the vector of the row width " << x.getDimSize(1) << ", got " << g;
  for (Value r : getResults()) {
    auto y = llvm::cast<RankedTensorType>(r.getType());
    if (y.getRank() != 2 || y.getDimSize(0) != x.getDimSize(0))
      return emitOpError() << "every result must be rank-2 with the input's " << x.getDimSize(0) << " rows, got " << y;
  }
  if (!(getEps().convertToDouble() > 0)) return emitOpError("eps must be > 0");
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
