// The state dialect: registration and verifiers. A pack's byte size is recomputed from its layout
// here; the runtime's packer (npu/oplib/matmul.h pack_weights) produces exactly this many bytes.
#include "dialects/state/StateDialect.h"

#include "core/quant.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace tandem::ir::state;

#include "dialects/state/StateDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/state/StateOps.cpp.inc"

void StateDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/state/StateOps.cpp.inc"
      >();
}

namespace {
constexpr int64_t kQuantBlock = tandem::kQK;
// Bytes of one GGUF block: its f16 scale and kQK 8-bit / 4-bit quants.
int64_t blockBytes(StringRef format) {
  return format == "q8_0" ? int64_t(sizeof(tandem::BlockQ8_0)) : format == "q4_0" ? int64_t(sizeof(tandem::BlockQ4_0)) : 0;
}
bool knownFormat(StringRef f) { return f == "f16" || f == "q8_0" || f == "q4_0"; }
bool knownOrder(StringRef o) { return o == "weight_stationary" || o == "activation_stationary"; }
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
RankedTensorType ranked(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }
}  // namespace

int64_t WeightPackOp::packBytes(int64_t out, int64_t in, StringRef format, int64_t tile) {
  const int64_t tileBytes = format == "f16" ? tile * tile * 2 : tile * (tile / kQuantBlock) * blockBytes(format);
  return ceilDiv(out, tile) * ceilDiv(in, tile) * tileBytes;
}

LogicalResult WeightPackOp::verify() {
  auto w = ranked(getWeight());
  if (w.getRank() != 2 || !w.hasStaticShape()) return emitOpError() << "weight must be a static rank-2 tensor, got " << w;
  if (!knownFormat(getQuant())) return emitOpError() << "unknown quant \"" << getQuant() << "\"";
  if (getLayout() != "interleaved_unpack" && getLayout() != "f16_tiles")
    return emitOpError() << "layout must be \"interleaved_unpack\" or \"f16_tiles\", got \"" << getLayout() << "\"";
  if (getLayout() == "interleaved_unpack" && getQuant() == "f16")
    return emitOpError("an f16 weight has no blocks to unpack: use layout \"f16_tiles\"");
  const int64_t tile = int64_t(getTile());
  if (tile <= 0 || (getQuant() != "f16" && tile % kQuantBlock != 0))
    return emitOpError() << "tile " << tile << " must be a positive multiple of the quant block " << kQuantBlock;
  if (getQuant() != "f16" && w.getDimSize(1) % kQuantBlock != 0)
    return emitOpError() << "input dimension " << w.getDimSize(1) << " is not whole " << getQuant() << " blocks";
  auto p = ranked(getPack());
  const int64_t want = packBytes(w.getDimSize(0), w.getDimSize(1), elementFormat(), tile);
  if (p.getRank() != 1 || p.getDimSize(0) != want)
    return emitOpError() << "pack must be tensor<" << want << "xi8> for this layout, got " << p;
  return success();
}

LogicalResult MatmulOp::verify() {
  auto x = ranked(getInput()), y = ranked(getResult()), p = ranked(getPack());
  if (x.getRank() != 2 || !x.hasStaticShape()) return emitOpError() << "input must be a static rank-2 tensor";
  if (!knownFormat(getFormat())) return emitOpError() << "unknown format \"" << getFormat() << "\"";
  if (!knownOrder(getOrder())) return emitOpError() << "unknown order \"" << getOrder() << "\"";
  if (getPhase() != "prefill" && getPhase() != "decode") return emitOpError() << "unknown phase \"" << getPhase() << "\"";
  const int64_t out = int64_t(getOut()), in = x.getDimSize(1), tile = int64_t(getTile());
  if (out <= 0 || tile <= 0) return emitOpError("out and tile must be positive");
  if (y.getRank() != 2 || y.getDimSize(0) != x.getDimSize(0) || y.getDimSize(1) != out)
    return emitOpError() << "result must be " << x.getDimSize(0) << "x" << out << ", got " << y;
  const int64_t want = WeightPackOp::packBytes(out, in, getFormat(), tile);
  if (p.getRank() != 1 || p.getDimSize(0) != want)
    return emitOpError() << "pack of " << p << " does not hold a " << out << "x" << in << " " << getFormat()
                         << " weight (needs " << want << " bytes)";
  return success();
}

LogicalResult KvPagesOp::verify() {
  const int64_t pages = int64_t(getPages()), pt = int64_t(getPageTokens()), width = int64_t(getWidth()),
                heads = int64_t(getHeads());
  if (pages <= 0 || pt <= 0 || width <= 0 || heads <= 0)
    return emitOpError("pages, page_tokens, width and heads must be positive");
  if (width % heads != 0) return emitOpError() << "width " << width << " is not a multiple of heads " << heads;
  if (getLayout() != "token_major" && getLayout() != "head_major")
    return emitOpError() << "layout must be \"token_major\" or \"head_major\", got \"" << getLayout() << "\"";
  auto c = ranked(getCache());
  // The last page may be partial: pages = ceil(tokens / page_tokens).
  if (c.getRank() != 2 || c.isDynamicDim(0) || (c.getDimSize(0) + pt - 1) / pt != pages || c.getDimSize(1) != width)
    return emitOpError() << "cache must be (" << (pages - 1) * pt + 1 << ".." << pages * pt << ")x" << width
                         << " for " << pages << " pages of " << pt << " tokens, got " << c;
  return success();
}

LogicalResult KvWriteOp::verify() {
  if (!pages()) return emitOpError("cache must come from state.kv_pages (its layout is what the write follows)");
  if (getPhase() != "prefill" && getPhase() != "decode") return emitOpError() << "unknown phase \"" << getPhase() << "\"";
  auto c = ranked(getCache()), r = ranked(getRows());
  if (r.getRank() != 2 || !r.hasStaticShape()) return emitOpError() << "rows must be a static rank-2 tensor, got " << r;
  if (r.getDimSize(1) != c.getDimSize(1))
    return emitOpError() << "row width " << r.getDimSize(1) << " does not match the cache width " << c.getDimSize(1);
  if (r.getDimSize(0) > c.getDimSize(0))
    return emitOpError() << r.getDimSize(0) << " new rows do not fit a cache of " << c.getDimSize(0) << " tokens";
  if (getPhase() == "decode" && r.getDimSize(0) != 1)
    return emitOpError() << "a decode append writes one row, got " << r.getDimSize(0);
  return success();
}

LogicalResult PositionMapOp::verify() {
  if (int64_t(getPageTokens()) <= 0) return emitOpError("page_tokens must be positive");
  auto p = ranked(getPositions()), m = ranked(getMap());
  if (p.getRank() != 1 || m.getRank() != 2 || m.getDimSize(0) != p.getDimSize(0) || m.getDimSize(1) != 2)
    return emitOpError() << "map must be " << p.getDimSize(0) << "x2 (page, row), got " << m;
  return success();
}
