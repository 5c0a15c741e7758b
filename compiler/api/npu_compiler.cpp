#include "compiler/api/npu_compiler.h"

#include <functional>

#include "compiler/api/layer_builder.h"

#include "dialects/npu/ProgramConversion.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"
#include "passes/Passes.h"
#include "passes/matmul_spec.h"
#include "passes/target_option.h"

namespace tandem::compiler {

using namespace mlir;

namespace {

int64_t intField(DictionaryAttr d, StringRef name) {
  auto a = d ? d.getAs<IntegerAttr>(name) : IntegerAttr();
  return a ? a.getInt() : -1;
}

// The matmul schedule a program's tandem.matmul / tandem.norm_linear attribute describes.
tandem::npu::oplib::MatmulSpec matmulSpecOf(DictionaryAttr d, int64_t out) {
  auto format = d ? d.getAs<StringAttr>("format") : StringAttr();
  auto order = d ? d.getAs<StringAttr>("order") : StringAttr();
  auto spec = ir::matmulSpec(intField(d, "rows"), intField(d, "in"), out,
                             ir::weightFormat(format ? format.getValue() : "").value_or(DType::F16),
                             order ? order.getValue() : "activation_stationary",
                             d && d.getAs<BoolAttr>("double_buffer") && d.getAs<BoolAttr>("double_buffer").getValue(),
                             d && d.getAs<BoolAttr>("double_buffer_out") && d.getAs<BoolAttr>("double_buffer_out").getValue());
  if (auto arrays = d ? d.getAs<IntegerAttr>("arrays") : IntegerAttr()) spec.arrays = uint32_t(arrays.getInt());
  return spec;
}

}  // namespace

namespace {

// Makes the module to compile in `ctx`; null when it cannot (the reason in the diagnostics or in
// *error).
using ModuleSource = std::function<OwningOpRef<ModuleOp>(MLIRContext& ctx, std::string* error)>;

Result<CompiledModule> compile_module(const ModuleSource& source, const CompileOptions& options) {
  DialectRegistry registry;
  registry.insert<ir::llm::LlmDialect, ir::state::StateDialect, ir::tdma::TdmaDialect, ir::npu::NpuDialect,
                  func::FuncDialect, arith::ArithDialect>();
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic& d) {
    llvm::raw_string_ostream os(diagnostics);
    if (auto flc = d.getLocation()->findInstanceOf<FileLineColLoc>())
      os << flc.getFilename().getValue() << ":" << flc.getLine() << ":" << flc.getColumn() << ": ";
    os << d << "\n";
    return success();
  });
  std::string error;
  OwningOpRef<ModuleOp> module = source(ctx, &error);
  if (!module) return InvalidArgument("npu compiler: " + (error.empty() ? "cannot parse the input:\n" + diagnostics : error));

  PassManager pm(&ctx);
  // Without npu-export: each program is converted and checked against the target once, below
  // (the pass would convert every program a second time).
  ir::buildNpuPipeline(pm, {options.target_path, options.tcm_budget, options.power_cap_w, options.layout, options.kv_layout,
                           options.fuse, /*export_check=*/false});
  if (failed(pm.run(*module))) return InvalidArgument("npu compiler: compilation failed:\n" + diagnostics);
  const tandem::npu::TargetModel* target = ir::loadTarget(options.target_path, *module);
  if (!target) return InvalidArgument("npu compiler: " + diagnostics);

  CompiledModule out;
  if (options.keep_ir) {
    llvm::raw_string_ostream irs(out.ir);
    module->print(irs);
  }
  // Programs in launch order: follow the launches through the functions.
  SymbolTable symbols(*module);
  std::string failure;
  module->walk([&](ir::npu::LaunchOp launch) -> WalkResult {
    auto prog = symbols.lookup<ir::npu::ProgramOp>(launch.getProgram());
    auto program = ir::npu::toProgram(prog);
    if (failed(program)) {
      failure = "npu compiler: " + diagnostics;
      return WalkResult::interrupt();
    }
    if (auto st = tandem::npu::verify(*program, *target); !st.ok()) {
      failure = "npu compiler: program " + program->name + " fails the " + target->name + " device check: " + st.message();
      return WalkResult::interrupt();
    }
    CompiledProgram cp;
    cp.program = std::move(*program);
    if (auto kv = prog->getAttrOfType<DictionaryAttr>("tandem.kv")) {
      cp.kind = CompiledProgram::Kind::kKvAppend;
      cp.kv.geometry.capacity = uint32_t(intField(kv, "capacity"));
      cp.kv.geometry.heads = uint32_t(intField(kv, "heads"));
      cp.kv.geometry.head_dim = uint32_t(intField(kv, "head_dim"));
      cp.kv.geometry.page_tokens = uint32_t(intField(kv, "page_tokens"));
      auto layout = kv.getAs<StringAttr>("layout");
      cp.kv.geometry.layout = tandem::npu::oplib::kv_layout_from_name(layout ? layout.getValue() : "")
                                  .value_or(tandem::npu::oplib::KvLayout::kTokenMajor);
      cp.kv.rows = uint32_t(intField(kv, "rows"));
      if (auto ph = kv.getAs<StringAttr>("phase")) cp.kv.phase = ph.getValue().str();
      if (auto est = kv.getAs<FloatAttr>("est_cycles")) cp.est_cycles = est.getValueAsDouble();
      out.programs.push_back(std::move(cp));
      return WalkResult::advance();
    }
    if (auto e = prog->getAttrOfType<DictionaryAttr>("tandem.elementwise")) {
      cp.kind = CompiledProgram::Kind::kElementwise;
      auto op = e.getAs<StringAttr>("op");
      cp.elementwise.op = tandem::npu::oplib::elt_op_from_name(op ? op.getValue() : "").value_or(tandem::npu::oplib::EltOp::kAdd);
      cp.elementwise.rows = uint32_t(intField(e, "rows"));
      cp.elementwise.cols = uint32_t(intField(e, "cols"));
      if (auto eps = e.getAs<FloatAttr>("eps")) cp.elementwise.eps = float(eps.getValueAsDouble());
      if (auto est = e.getAs<FloatAttr>("est_cycles")) cp.est_cycles = est.getValueAsDouble();
      out.programs.push_back(std::move(cp));
      return WalkResult::advance();
    }
    if (auto nl = prog->getAttrOfType<DictionaryAttr>("tandem.norm_linear")) {
      cp.kind = CompiledProgram::Kind::kNormLinear;
      cp.norm_linear.base = matmulSpecOf(nl, 1);
      if (auto outs = nl.getAs<ArrayAttr>("outs"))
        for (Attribute o : outs) cp.norm_linear.outs.push_back(uint32_t(llvm::cast<IntegerAttr>(o).getInt()));
      if (auto eps = nl.getAs<FloatAttr>("eps")) cp.norm_linear.eps = float(eps.getValueAsDouble());
      if (auto pack = launch.getArgs()[2].getDefiningOp<ir::state::WeightPackOp>()) cp.source_quant = pack.getQuant().str();
      if (auto est = nl.getAs<FloatAttr>("est_cycles")) cp.est_cycles = est.getValueAsDouble();
      out.programs.push_back(std::move(cp));
      return WalkResult::advance();
    }
    auto d = prog->getAttrOfType<DictionaryAttr>("tandem.matmul");
    cp.spec = matmulSpecOf(d, intField(d, "out"));
    if (auto pack = launch.getArgs()[1].getDefiningOp<ir::state::WeightPackOp>()) cp.source_quant = pack.getQuant().str();
    if (auto est = d ? d.getAs<FloatAttr>("est_cycles") : FloatAttr()) cp.est_cycles = est.getValueAsDouble();
    out.programs.push_back(std::move(cp));
    return WalkResult::advance();
  });
  if (!failure.empty()) return Internal(failure);
  module->walk([&](Operation* op) {
    auto fb = op->getAttrOfType<StringAttr>("fallback");
    if (!fb) return;
    FallbackOp f;
    f.op = op->getName().getStringRef().str();
    f.device = fb.getValue().str();
    if (auto r = op->getAttrOfType<StringAttr>("fallback_reason")) f.reason = r.getValue().str();
    if (auto c = op->getAttrOfType<FloatAttr>("switch_cost_s")) f.switch_cost_s = c.getValueAsDouble();
    out.fallbacks.push_back(std::move(f));
  });
  if (!diagnostics.empty() && out.programs.empty() && out.fallbacks.empty())
    return Internal("npu compiler: " + diagnostics);
  return out;
}

}  // namespace

Result<CompiledModule> compile_mlir(std::string_view text, const CompileOptions& options) {
  return compile_module(
      [text](MLIRContext& ctx, std::string*) {
        return parseSourceString<ModuleOp>(StringRef(text.data(), text.size()), &ctx, "input.mlir");
      },
      options);
}

namespace {

// What a fallback of a linear to another format reads as in the report: "linear -> npu (f16)".
FallbackOp format_fallback(const std::string& weight, const std::string& used, const std::string& reason) {
  FallbackOp f;
  f.op = "llm.linear";
  f.device = "npu (" + used + ")";
  f.reason = weight + ": " + reason + "; compiled as " + used;
  return f;
}

}  // namespace

Result<CompiledModule> compile_linear(uint32_t rows, uint32_t in, uint32_t out, std::string_view requested,
                                      const CompileOptions& options) {
  // A row the format's block does not divide is compiled as f16, as compile_layer's linears are.
  int64_t block = 1;
  const std::string quant = linear_format(requested, in, &block);
  auto tensor = [](uint32_t a, uint32_t b) { return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf16>"; };
  const std::string x = tensor(rows, in), w = tensor(out, in), y = tensor(rows, out);
  const std::string text = "func.func @linear(%x: " + x + ", %w: " + w + ") -> " + y + " {\n  %y = llm.linear %x, %w {quant = \"" +
                           std::string(quant) + "\"} : " + x + ", " + w + " -> " + y + "\n  return %y : " + y + "\n}\n";
  Result<CompiledModule> m = compile_mlir(text, options);
  if (m.ok() && quant != requested)
    m->fallbacks.push_back(format_fallback(std::to_string(out) + "x" + std::to_string(in) + " slice", "f16",
                                           "input width " + std::to_string(in) + " is not a multiple of the " +
                                               std::string(requested) + " block (" + std::to_string(block) + ")"));
  return m;
}

Result<CompiledModule> compile_layer(const ModelConfig& c, int rows, std::string_view phase, std::string_view quant,
                                     const CompileOptions& options) {
  std::vector<FormatFallback> formats;
  Result<CompiledModule> m = compile_module(
      [&](MLIRContext& ctx, std::string* error) { return build_decoder_layer(ctx, c, rows, phase, quant, error, &formats); },
      options);
  if (m.ok())
    for (const FormatFallback& f : formats) m->fallbacks.push_back(format_fallback(f.weight, f.used, f.reason));
  return m;
}

}  // namespace tandem::compiler
