#include "compiler/api/layer_ir.h"

#include <algorithm>

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "compiler/api/layer_builder.h"
#include "core/dtype.h"
#include "core/memory_pool.h"
#include "dialects/llm/LlmDialect.h"
#include "graph/transformer_graph.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "model/model.h"

using namespace mlir;

namespace tandem::compiler {
namespace {

namespace llm = tandem::ir::llm;
using graph::OpCall;
using graph::OpKind;

// Walks the op list of a one-layer model and emits the llm op of each, tracking which SSA value
// each buffer of the pool holds (an op that writes a buffer in place gives it a new value).
class LayerEmitter {
 public:
  LayerEmitter(OpBuilder& b, Location loc, const ModelConfig& c, const graph::Buffers& buf, int rows, int context,
               StringAttr quant, std::vector<FormatFallback>* format_fallbacks)
      : b_(b), loc_(loc), c_(c), buf_(buf), rows_(rows), context_(context), quant_(quant),
        format_fallbacks_(format_fallbacks) {}

  // The function's arguments: the residual rows first, then each weight as the ops first read it,
  // then the positions, the two caches and the append position.
  Type act(int64_t width) const { return RankedTensorType::get({rows_, width}, b_.getF16Type()); }
  Type cache() const { return RankedTensorType::get({context_, c_.kv_dim()}, b_.getF16Type()); }
  Type weight_type(const Weight& w) const {
    return w.rows > 1 ? RankedTensorType::get({w.rows, w.cols}, b_.getF16Type())
                      : RankedTensorType::get({w.cols}, b_.getF16Type());
  }

  LogicalResult emit(const std::vector<OpCall>& ops, func::FuncOp fn, std::string* error) {
    Block* body = fn.addEntryBlock();
    b_.setInsertionPointToStart(body);
    value_[buf_.x] = body->getArgument(0);
    for (const OpCall& op : ops) {
      if (failed(emit_one(op, fn, error))) return failure();
    }
    b_.create<func::ReturnOp>(loc_, ValueRange{value_.at(buf_.x)});
    fn.setFunctionType(b_.getFunctionType(body->getArgumentTypes(), {act(c_.dim)}));
    return success();
  }

 private:
  // The value a buffer holds now.
  Value in(const float* p) const { return value_.at(p); }
  // Arguments are appended to the entry block as ops first read them; emit() sets the function's
  // type from the block once the body is done.
  Value argument(func::FuncOp fn, Type t) { return fn.getBody().front().addArgument(t, loc_); }
  Value weight(func::FuncOp fn, const Weight* w) {
    auto it = weights_.find(w);
    return it != weights_.end() ? it->second : weights_[w] = argument(fn, weight_type(*w));
  }
  Value extra(func::FuncOp fn, const std::string& key, Type t) {
    auto it = extras_.find(key);
    return it != extras_.end() ? it->second : extras_[key] = argument(fn, t);
  }
  Value positions(func::FuncOp fn) { return extra(fn, "pos", RankedTensorType::get({rows_}, b_.getI32Type())); }

  // The format a linear reading rows of `w` is compiled in: the layer's, or f16 where the
  // layer's block does not divide the row (stories260K's ffn_down reads 172 columns). That is
  // what llama-quantize leaves such a tensor in, so it is also what the runtime asks the compile
  // cache for; the other linears keep the layer's format.
  StringAttr quant_for(const Weight& w) {
    int64_t block = 1;
    if (linear_format(quant_.getValue(), w.cols, &block) == quant_.getValue()) return quant_;
    if (format_fallbacks_)
      format_fallbacks_->push_back({w.name, std::string(quant_.getValue()), "f16",
                                    "input width " + std::to_string(w.cols) + " is not a multiple of the " +
                                        std::string(quant_.getValue()) + " block (" + std::to_string(block) + ")"});
    return b_.getStringAttr("f16");
  }

  LogicalResult emit_one(const OpCall& op, func::FuncOp fn, std::string* error) {
    auto f32 = [&](double v) { return b_.getF32FloatAttr(float(v)); };
    switch (op.kind) {
      case OpKind::kGetRows: return success();  // the embedding lookup precedes the layer
      case OpKind::kRmsNorm: {
        Value g = weight(fn, op.weight);
        if (op.a.rows != rows_) {  // the op list's view of q or k as one row per head: a per-head norm
          value_[op.out.data] = b_.create<llm::HeadNormOp>(loc_, in(op.a.data).getType(), in(op.a.data), g, f32(op.eps),
                                                           b_.getI64IntegerAttr(op.a.cols), StringAttr(), StringAttr());
          return success();
        }
        value_[op.out.data] = b_.create<llm::RmsNormOp>(loc_, in(op.a.data).getType(), in(op.a.data), g, f32(op.eps),
                                                        StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kMatmul: {
        Value w = weight(fn, op.weight);
        value_[op.out.data] = b_.create<llm::LinearOp>(loc_, act(op.weight->rows), in(op.a.data), w, quant_for(*op.weight), StringAttr(),
                                                       StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kAddBias: {
        Value bias = weight(fn, op.weight);
        value_[op.out.data] = b_.create<llm::BiasAddOp>(loc_, in(op.out.data).getType(), in(op.out.data), bias,
                                                        StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kRope: {
        // The op's tables say which rotation it takes: a local layer's own base, or the global one.
        const bool local = op.cos == buf_.cos_local && buf_.cos_local != buf_.cos;
        value_[op.out.data] = b_.create<llm::RopeOp>(
            loc_, in(op.out.data).getType(), in(op.out.data), positions(fn), b_.getI64IntegerAttr(op.head_dim),
            f32(local ? c_.rope_base_swa : c_.rope_base), b_.getStringAttr(op.half_split ? "half_split" : "adjacent_pairs"),
            StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kKvStore: {
        Value kc = extra(fn, "kcache", cache()), vc = extra(fn, "vcache", cache());
        Value at = extra(fn, "at", b_.getIndexType());
        value_[op.k_cache] = b_.create<llm::KvAppendOp>(loc_, cache(), kc, in(op.a.data), at, StringAttr(), StringAttr());
        value_[op.v_cache] = b_.create<llm::KvAppendOp>(loc_, cache(), vc, in(op.b.data), at, StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kAttention: {
        value_[op.out.data] = b_.create<llm::AttentionOp>(
            loc_, in(op.a.data).getType(), in(op.a.data), value_.at(op.k_cache), value_.at(op.v_cache),
            b_.getI64IntegerAttr(op.n_heads), b_.getI64IntegerAttr(op.n_kv_heads), b_.getI64IntegerAttr(op.head_dim),
            // The scale is written only where it is not the default 1/sqrt(head_dim) (Gemma's 27B).
            op.attention_scale() != 1.0f / std::sqrt(float(op.head_dim)) ? f32(op.attention_scale()) : FloatAttr(),
            op.softcap > 0 ? f32(op.softcap) : FloatAttr(),
            op.window > 0 ? b_.getI64IntegerAttr(op.window) : IntegerAttr(), StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kAdd: {
        value_[op.out.data] = b_.create<llm::AddOp>(loc_, in(op.out.data).getType(), in(op.out.data), in(op.a.data),
                                                    StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kSwiglu: {
        value_[op.out.data] = b_.create<llm::SwigluOp>(loc_, in(op.out.data).getType(), in(op.out.data), in(op.a.data),
                                                       StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kGeglu: {
        value_[op.out.data] = b_.create<llm::GegluOp>(loc_, in(op.out.data).getType(), in(op.out.data), in(op.a.data),
                                                      StringAttr(), StringAttr());
        return success();
      }
      case OpKind::kSoftcap: break;  // logits only: never inside a layer
      case OpKind::kNormLinear: break;  // the runtime's fused launch: never in an op list
    }
    *error = "the llm dialect has no form for " + op.describe();
    return failure();
  }

  OpBuilder& b_;
  Location loc_;
  const ModelConfig& c_;
  const graph::Buffers& buf_;
  int64_t rows_, context_;
  StringAttr quant_;
  std::vector<FormatFallback>* format_fallbacks_;
  std::map<const void*, Value> value_;
  std::map<const Weight*, Value> weights_;
  std::map<std::string, Value> extras_;
};

}  // namespace

std::string linear_format(std::string_view requested, int64_t cols, int64_t* block) {
  const std::optional<DType> t = dtype_from_name(requested);
  *block = t ? dtype_traits(*t).block_size : 1;
  return cols % *block == 0 ? std::string(requested) : std::string("f16");
}

OwningOpRef<ModuleOp> build_decoder_layer(MLIRContext& ctx, const ModelConfig& config, int rows, std::string_view phase,
                                          std::string_view quant, std::string* error,
                                          std::vector<FormatFallback>* format_fallbacks) {
  const std::optional<DType> type = dtype_from_name(quant);
  if (!type || (*type != DType::F16 && *type != DType::Q8_0 && *type != DType::Q4_0)) {
    *error = "weights stored as '" + std::string(quant) + "' have no llm form (f16, q8_0, q4_0)";
    return nullptr;
  }
  // One layer of the model, shapes only: its op list is the layer's.
  ModelConfig c = config;
  c.n_layers = 1;
  std::shared_ptr<Model> model = Model::shape_only(c, *type);
  // The KV capacity a run uses by default (runtime ForwardShape: the model's context, at most
  // 4096), so the compiled appends bind a default run's npu-owned pages.
  const int context = c.context_length > 0 ? std::min(c.context_length, 4096) : 4096;
  MemoryPool pool;
  graph::BufferPlan plan(pool, c, rows, context);
  pool.allocate_address_space_only();
  const graph::Buffers buf = plan.bind(pool);
  const std::vector<OpCall> ops = graph::build_forward(*model, buf, rows, 0, nullptr, false);

  ctx.loadDialect<llm::LlmDialect, func::FuncDialect>();
  OpBuilder b(&ctx);
  const Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  const std::string name = "layer_" + std::string(phase) + "_" + std::to_string(rows);
  LayerEmitter emit(b, loc, c, buf, rows, context, b.getStringAttr(quant), format_fallbacks);
  auto fn = b.create<func::FuncOp>(loc, name, b.getFunctionType({emit.act(c.dim)}, {}));
  fn->setAttr("llm.phase", b.getStringAttr(phase));
  if (failed(emit.emit(ops, fn, error))) return nullptr;
  return module;
}

Result<std::string> decoder_layer_mlir(const ModelConfig& c, int rows, std::string_view phase, std::string_view quant) {
  MLIRContext ctx(MLIRContext::Threading::DISABLED);
  std::string error;
  OwningOpRef<ModuleOp> m = build_decoder_layer(ctx, c, rows, phase, quant, &error);
  if (!m) return InvalidArgument("npu compiler: " + c.arch_name + " layer: " + error);
  std::string text;
  llvm::raw_string_ostream os(text);
  m->print(os);
  return text;
}

}  // namespace tandem::compiler
