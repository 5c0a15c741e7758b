// The llm dialect: registration and verifiers. Verifiers reject what no later level could lower
// correctly: shape mismatches, unknown storage formats or phases, quantized rows that are not
// whole blocks, head counts that do not divide.
#include "dialects/llm/LlmDialect.h"

#include "core/quant.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace tandem::ir::llm;

#include "dialects/llm/LlmDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/llm/LlmOps.cpp.inc"

void LlmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/llm/LlmOps.cpp.inc"
      >();
}

namespace {

constexpr int64_t kQuantBlock = tandem::kQK;  // GGUF q8_0 / q4_0 block length

RankedTensorType ranked(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

LogicalResult verifyMatrix(Operation* op, Value v, StringRef what) {
  auto t = ranked(v);
  if (t.getRank() != 2) return op->emitOpError() << what << " must be a rank-2 tensor, got " << t;
  if (t.isDynamicDim(0) || t.isDynamicDim(1))
    return op->emitOpError() << what << " must have static dimensions (NPU graphs are static), got " << t;
  return success();
}

LogicalResult verifyCommon(Operation* op, std::optional<StringRef> phase, std::optional<StringRef> fallback) {
  if (phase && *phase != "prefill" && *phase != "decode")
    return op->emitOpError() << "phase must be \"prefill\" or \"decode\", got \"" << *phase << "\"";
  if (fallback && *fallback != "cpu" && *fallback != "gpu")
    return op->emitOpError() << "fallback must be \"cpu\" or \"gpu\", got \"" << *fallback << "\"";
  return success();
}

LogicalResult verifyQuant(Operation* op, StringRef quant, int64_t in) {
  if (quant != "f16" && quant != "q8_0" && quant != "q4_0")
    return op->emitOpError() << "quant must be \"f16\", \"q8_0\" or \"q4_0\", got \"" << quant << "\"";
  if (quant != "f16" && in % kQuantBlock != 0)
    return op->emitOpError() << "input dimension " << in << " is not a multiple of the " << quant << " block ("
                             << kQuantBlock << ")";
  return success();
}

LogicalResult verifyLinearShapes(Operation* op, Value x, Value w, Value y, StringRef quant) {
  if (failed(verifyMatrix(op, x, "input")) || failed(verifyMatrix(op, w, "weight")) ||
      failed(verifyMatrix(op, y, "result")))
    return failure();
  auto xs = ranked(x).getShape(), ws = ranked(w).getShape(), ys = ranked(y).getShape();
  if (xs[1] != ws[1])
    return op->emitOpError() << "input width " << xs[1] << " does not match the weight's input dimension " << ws[1];
  if (ys[0] != xs[0] || ys[1] != ws[0])
    return op->emitOpError() << "result must be " << xs[0] << "x" << ws[0] << ", got " << ys[0] << "x" << ys[1];
  return verifyQuant(op, quant, xs[1]);
}

}  // namespace

int64_t tandem::ir::llm::activationRows(Operation* op) {
  if (op->getNumOperands() == 0) return 0;
  auto t = llvm::dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!t || t.getRank() < 1 || t.isDynamicDim(0)) return 0;
  if (llvm::isa<KvAppendOp>(op)) {  // the cache comes first; the new rows decide the phase
    auto r = llvm::dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    return r && r.getRank() >= 1 ? r.getDimSize(0) : 0;
  }
  return t.getDimSize(0);
}

LogicalResult LinearOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback()))) return failure();
  if (auto df = getDataflow(); df && *df != "weight_stationary" && *df != "activation_stationary")
    return emitOpError() << "dataflow must be \"weight_stationary\" or \"activation_stationary\", got \"" << *df << "\"";
  if (getPhase() && *getPhase() == "decode" && activationRows(*this) != 1)
    return emitOpError() << "decode phase needs exactly one row, got " << activationRows(*this);
  return verifyLinearShapes(*this, getInput(), getWeight(), getResult(), getQuant());
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getInput(), "input")))
    return failure();
  auto g = ranked(getGamma());
  const int64_t d = ranked(getInput()).getDimSize(1);
  if (g.getRank() != 1 || g.getDimSize(0) != d)
    return emitOpError() << "gamma must be a vector of " << d << " elements, got " << g;
  if (getResult().getType() != getInput().getType()) return emitOpError("result type must equal the input type");
  if (!(getEps().convertToDouble() > 0)) return emitOpError() << "eps must be > 0, got " << getEps().convertToDouble();
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getInput(), "input")))
    return failure();
  const int64_t hd = int64_t(getHeadDim()), rows = ranked(getInput()).getDimSize(0),
                width = ranked(getInput()).getDimSize(1);
  if (hd <= 0 || hd % 2 != 0) return emitOpError() << "head_dim must be positive and even, got " << hd;
  if (width % hd != 0) return emitOpError() << "row width " << width << " is not a multiple of head_dim " << hd;
  auto p = ranked(getPositions());
  if (p.getRank() != 1 || p.getDimSize(0) != rows)
    return emitOpError() << "positions must be a vector of " << rows << " elements, got " << p;
  if (!(getTheta().convertToDouble() > 0)) return emitOpError("theta must be > 0");
  if (getStyle() != "adjacent_pairs" && getStyle() != "half_split")
    return emitOpError() << "style must be \"adjacent_pairs\" or \"half_split\", got \"" << getStyle() << "\"";
  if (getResult().getType() != getInput().getType()) return emitOpError("result type must equal the input type");
  return success();
}

LogicalResult HeadNormOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getInput(), "input")))
    return failure();
  const int64_t hd = int64_t(getHeadDim()), width = ranked(getInput()).getDimSize(1);
  if (hd <= 0 || width % hd != 0) return emitOpError() << "row width " << width << " is not a multiple of head_dim " << hd;
  auto g = ranked(getGamma());
  if (g.getRank() != 1 || g.getDimSize(0) != hd)
    return emitOpError() << "gamma must be a vector of head_dim " << hd << " values, got " << g;
  if (!(getEps().convertToDouble() > 0)) return emitOpError("eps must be > 0");
  return success();
}

LogicalResult BiasAddOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getInput(), "input")))
    return failure();
  auto b = ranked(getBias());
  const int64_t width = ranked(getInput()).getDimSize(1);
  if (b.getRank() != 1 || b.getDimSize(0) != width)
    return emitOpError() << "bias must be a vector of the row width " << width << ", got " << b;
  return success();
}

LogicalResult KvAppendOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getCache(), "cache")) ||
      failed(verifyMatrix(*this, getRows(), "rows")))
    return failure();
  auto c = ranked(getCache()), r = ranked(getRows());
  if (c.getDimSize(1) != r.getDimSize(1))
    return emitOpError() << "row width " << r.getDimSize(1) << " does not match the cache width " << c.getDimSize(1);
  if (r.getDimSize(0) > c.getDimSize(0))
    return emitOpError() << r.getDimSize(0) << " new rows do not fit a cache of " << c.getDimSize(0) << " tokens";
  if (getResult().getType() != getCache().getType()) return emitOpError("result type must equal the cache type");
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getQuery(), "query")) ||
      failed(verifyMatrix(*this, getKeys(), "keys")) || failed(verifyMatrix(*this, getValues(), "values")))
    return failure();
  const int64_t h = int64_t(getNumHeads()), kvh = int64_t(getNumKvHeads()), hd = int64_t(getHeadDim());
  if (h <= 0 || kvh <= 0 || hd <= 0) return emitOpError("num_heads, num_kv_heads and head_dim must be positive");
  if (h % kvh != 0) return emitOpError() << "num_heads " << h << " is not a multiple of num_kv_heads " << kvh;
  if (ranked(getQuery()).getDimSize(1) != h * hd)
    return emitOpError() << "query width must be num_heads x head_dim = " << h * hd << ", got "
                         << ranked(getQuery()).getDimSize(1);
  if (getKeys().getType() != getValues().getType()) return emitOpError("keys and values must have the same type");
  if (ranked(getKeys()).getDimSize(1) != kvh * hd)
    return emitOpError() << "cache width must be num_kv_heads x head_dim = " << kvh * hd << ", got "
                         << ranked(getKeys()).getDimSize(1);
  if (getResult().getType() != getQuery().getType()) return emitOpError("result type must equal the query type");
  if (getScale() && !(getScale()->convertToFloat() > 0)) return emitOpError("scale must be > 0");
  if (getSoftcap() && !(getSoftcap()->convertToFloat() > 0)) return emitOpError("softcap must be > 0");
  if (getWindow() && int64_t(*getWindow()) <= 0) return emitOpError("window must be > 0");
  return success();
}

LogicalResult MlpOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getInput(), "input")) ||
      failed(verifyMatrix(*this, getWGate(), "w_gate")) || failed(verifyMatrix(*this, getWUp(), "w_up")) ||
      failed(verifyMatrix(*this, getWDown(), "w_down")))
    return failure();
  const int64_t d = ranked(getInput()).getDimSize(1), f = ranked(getWGate()).getDimSize(0);
  if (getWGate().getType() != getWUp().getType()) return emitOpError("w_gate and w_up must have the same type");
  if (ranked(getWGate()).getDimSize(1) != d)
    return emitOpError() << "w_gate input dimension must be " << d << ", got " << ranked(getWGate()).getDimSize(1);
  auto down = ranked(getWDown()).getShape();
  if (down[0] != d || down[1] != f)
    return emitOpError() << "w_down must be " << d << "x" << f << ", got " << down[0] << "x" << down[1];
  if (getResult().getType() != getInput().getType()) return emitOpError("result type must equal the input type");
  if (failed(verifyQuant(*this, getQuant(), d))) return failure();
  return verifyQuant(*this, getQuant(), f);
}

LogicalResult SampleOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback())) || failed(verifyMatrix(*this, getLogits(), "logits")))
    return failure();
  if (getTemperature().convertToDouble() < 0) return emitOpError("temperature must be >= 0");
  if (int64_t(getTopK()) < 0) return emitOpError("top_k must be >= 0");
  auto r = ranked(getResult());
  if (r.getRank() != 1 || r.getDimSize(0) != ranked(getLogits()).getDimSize(0))
    return emitOpError() << "result must hold one token per row (" << ranked(getLogits()).getDimSize(0) << ")";
  return success();
}

LogicalResult AddOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback()))) return failure();
  return verifyMatrix(*this, getLhs(), "lhs");
}

LogicalResult SwigluOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback()))) return failure();
  return verifyMatrix(*this, getGate(), "gate");
}

LogicalResult GegluOp::verify() {
  if (failed(verifyCommon(*this, getPhase(), getFallback()))) return failure();
  return verifyMatrix(*this, getGate(), "gate");
}
