#include "compiler/driver/variant_set.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "compile_cache/cache.h"
#include "compile_cache/sha256.h"
#include "compiler/api/layer_ir.h"
#include "compiler/api/npu_compiler.h"
#include "core/dtype.h"
#include "npu/executor.h"
#include "npu/oplib/elementwise_check.h"
#include "npu/oplib/kv_cache.h"
#include "npu/oplib/matmul_check.h"
#include "npu/oplib/norm_linear_check.h"

namespace tandem::compiler {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string order_name(npu::oplib::MatmulOrder o) {
  return o == npu::oplib::MatmulOrder::kNaive ? "weight_stationary" : "activation_stationary";
}

// What the validation memo knows a program by: its bytes, named by shape (so identical programs
// of other variants or of k and v are checked once).
std::string program_key(const npu::Program& p) {
  const std::vector<uint8_t> bytes = npu::serialize(p);
  return compile_cache::sha256_hex(bytes.data(), bytes.size());
}

// A program's name in the cache: its shape (so identical programs of other variants, or of k and
// v, share a name and hence a key).
std::string name_for(const CompiledProgram& p) {
  switch (p.kind) {
    case CompiledProgram::Kind::kKvAppend: {
      const npu::oplib::KvGeometry& g = p.kv.geometry;
      return "kv" + std::to_string(p.kv.rows) + "_" + std::to_string(g.capacity) + "x" + std::to_string(g.width()) + "_" +
             std::string(npu::oplib::kv_layout_name(g.layout));
    }
    case CompiledProgram::Kind::kElementwise:
      return std::string(npu::oplib::elt_op_name(p.elementwise.op)) + std::to_string(p.elementwise.rows) + "_" +
             std::to_string(p.elementwise.cols);
    case CompiledProgram::Kind::kNormLinear: {
      const npu::oplib::NormLinearSpec& s = p.norm_linear;
      std::string name = "norm_mm" + std::to_string(s.base.n) + "_in" + std::to_string(s.base.in);
      for (uint32_t out : s.outs) name += "_" + std::to_string(out);
      return name + "_" + std::string(dtype_name(s.base.wtype)) + "_from_" + p.source_quant;
    }
    case CompiledProgram::Kind::kMatmul:
      break;
  }
  return "mm" + std::to_string(p.spec.n) + "_" + std::to_string(p.spec.out) + "x" + std::to_string(p.spec.in) + "_" +
         std::string(dtype_name(p.spec.wtype)) + "_from_" + p.source_quant;
}

// Validates (when asked, once per distinct program) at the bucket edges: every row valid (the
// bucket full), and the shortest length the bucket serves (one row past the previous bucket; 1
// for the first bucket and for decode), the rest of the rows padding. The worst error ratio, or
// -1 when not validated.
Result<double> validate_at_bucket_edges(const CompiledProgram& p, const std::string& key, const VariantSetOptions& o,
                                        const std::string& phase, uint32_t rows, std::map<std::string, double>& validated,
                                        const std::function<Result<npu::oplib::MatmulCheck>(uint32_t)>& check) {
  if (!o.validate) return -1.0;
  if (validated.count(key)) return validated[key];
  uint32_t prev = 0;
  for (uint32_t b : o.buckets)
    if (b < rows) prev = std::max(prev, b);
  double worst = 0;
  for (uint32_t valid : {rows, std::min(rows, prev + 1)}) {
    TANDEM_ASSIGN_OR_RETURN(npu::oplib::MatmulCheck c, check(valid));
    if (!c.ok())
      return Internal("validation failed: " + p.program.name + " (" + phase + ", " + std::to_string(rows) + " rows, " +
                      std::to_string(valid) + " valid): " + std::to_string(c.failures) +
                      " outputs over the error threshold (max ratio " + std::to_string(c.max_error_ratio) + ")" +
                      (c.padding_untouched ? "" : ", padding rows not zero"));
    worst = std::max(worst, c.max_error_ratio);
  }
  return validated[key] = worst;
}

struct TimedRun {
  double seconds = 0;
  uint64_t ddr_bytes = 0;
};

// The program on the executor's timing model alone (no operands needed): its modeled time and
// DDR traffic, once per distinct program.
Result<TimedRun> timed_run(const npu::Program& p, const std::string& key, const npu::TargetModel& target,
                           std::map<std::string, TimedRun>& timed) {
  if (auto it = timed.find(key); it != timed.end()) return it->second;
  npu::Executor ex(target);
  TANDEM_ASSIGN_OR_RETURN(npu::ExecReport r, ex.run(p, {false, true}));
  return timed[key] = TimedRun{r.seconds, r.dma_bytes_in + r.dma_bytes_out};
}

// The manifest fields of a matmul schedule (a plain matmul's or a fused program's).
compile_cache::ProgramEntry schedule_entry(const npu::oplib::MatmulSpec& spec, const CompiledProgram& p,
                                           const npu::TargetModel& target) {
  compile_cache::ProgramEntry e;
  e.rows = spec.n;
  e.in = spec.in;
  e.format = std::string(dtype_name(spec.wtype));
  e.source_quant = p.source_quant;
  e.order = order_name(spec.order);
  e.double_buffer = spec.double_buffer;
  e.double_buffer_out = spec.double_buffer_out;
  e.arrays = npu::oplib::matmul_arrays(spec, target);
  e.est_cycles = p.est_cycles;
  return e;
}

// A matmul's manifest entry, validated at the bucket edges.
Result<compile_cache::ProgramEntry> matmul_entry(const CompiledProgram& p, const std::string& key, const npu::TargetModel& target,
                                                 const VariantSetOptions& o, const std::string& phase, uint32_t rows,
                                                 uint64_t seed, std::map<std::string, double>& validated) {
  compile_cache::ProgramEntry e = schedule_entry(p.spec, p, target);
  e.out = p.spec.out;
  TANDEM_ASSIGN_OR_RETURN(e.max_error_ratio, validate_at_bucket_edges(p, key, o, phase, rows, validated, [&](uint32_t valid) {
    return npu::oplib::check_matmul_program(p.program, p.spec, *dtype_from_name(p.source_quant), valid, seed + valid, target,
                                            o.validate_rows);
  }));
  return e;
}

// A fused norm + projections program's entry: the matmul fields of its schedule and its
// projections, validated like a matmul (every projection against rmsnorm then matmul in fp64).
Result<compile_cache::ProgramEntry> norm_linear_entry(const CompiledProgram& p, const std::string& key,
                                                      const npu::TargetModel& target,
                                                      const VariantSetOptions& o, const std::string& phase, uint32_t rows,
                                                      uint64_t seed, std::map<std::string, double>& validated) {
  const npu::oplib::NormLinearSpec& s = p.norm_linear;
  compile_cache::ProgramEntry e = schedule_entry(s.base, p, target);
  e.kind = "norm_linear";
  e.norm_linear = {s.outs, double(s.eps)};
  TANDEM_ASSIGN_OR_RETURN(e.max_error_ratio, validate_at_bucket_edges(p, key, o, phase, rows, validated, [&](uint32_t valid) {
    return npu::oplib::check_norm_linear_program(p.program, s, *dtype_from_name(p.source_quant), valid, seed + valid, target,
                                                 o.validate_rows);
  }));
  return e;
}

// A KV append's manifest entry, validated (when asked) on the functional executor: appends at
// the cache's first token, at its last slot (the bucket edge), and starting one token before a
// page boundary (the append switches pages), each compared byte for byte with the layout.
Result<compile_cache::ProgramEntry> kv_entry(const CompiledProgram& p, const std::string& key, const npu::TargetModel& target,
                                             bool validate,
                                             uint64_t seed, std::map<std::string, double>& validated) {
  const npu::oplib::KvGeometry& g = p.kv.geometry;
  compile_cache::ProgramEntry e;
  e.kind = "kv_append";
  e.rows = p.kv.rows;
  e.kv = {g.capacity, g.heads, g.head_dim, g.page_tokens, std::string(npu::oplib::kv_layout_name(g.layout)), p.kv.phase};
  e.est_cycles = p.est_cycles;
  if (validate && !validated.count(key)) {
    const uint32_t last = g.capacity - p.kv.rows;
    for (uint32_t at : {0u, last, std::min(last, g.page_tokens - 1)}) {
      TANDEM_ASSIGN_OR_RETURN(auto c, npu::oplib::check_kv_append_program(p.program, g, p.kv.rows, at, seed + at, target));
      if (!c.ok())
        return Internal("validation failed: " + p.program.name + " (" + p.kv.phase + " KV append of " +
                        std::to_string(p.kv.rows) + " rows at position " + std::to_string(at) + "): " +
                        std::to_string(c.wrong) + " of " + std::to_string(c.written) + " cache bytes wrong, " +
                        std::to_string(c.clobbered) + " bytes outside the appended tokens changed");
    }
    validated[key] = 0;  // a copy: exact or wrong
  }
  e.max_error_ratio = validate ? 0 : -1;
  return e;
}

// An elementwise program's manifest entry, validated (when asked) against the fp64 reference on
// random rows. Padding rows of a bucket are independent rows here (each row is computed alone).
Result<compile_cache::ProgramEntry> elementwise_entry(const CompiledProgram& p, const std::string& key,
                                                      const npu::TargetModel& target, bool validate,
                                                      uint64_t seed, std::map<std::string, double>& validated) {
  const CompiledElementwise& el = p.elementwise;
  compile_cache::ProgramEntry e;
  e.kind = "elementwise";
  e.rows = el.rows;
  e.elementwise = {std::string(npu::oplib::elt_op_name(el.op)), el.cols, double(el.eps)};
  e.est_cycles = p.est_cycles;
  if (validate && !validated.count(key)) {
    TANDEM_ASSIGN_OR_RETURN(auto c, npu::oplib::check_elementwise_program(p.program, el.op, el.rows, el.cols, el.eps, seed, target));
    if (!c.ok())
      return Internal("validation failed: " + p.program.name + ": " + std::to_string(c.failures) + " of " +
                      std::to_string(c.outputs_checked) + " outputs over the error threshold (max ratio " +
                      std::to_string(c.max_error_ratio) + ")" + (c.wrote_past_output ? ", wrote past its output" : ""));
    validated[key] = c.max_error_ratio;
  }
  e.max_error_ratio = validate ? validated[key] : -1;
  return e;
}

}  // namespace

Result<std::vector<PowerLevel>> parse_power_levels(const std::string& list) {
  std::vector<PowerLevel> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, end - start);
    start = end + 1;
    if (item.empty()) return InvalidArgument("--power-levels: empty item in '" + list + "'");
    if (item == "max") {
      out.push_back({"max", 0});
      continue;
    }
    std::string num = item;
    if (num.back() == 'W' || num.back() == 'w') num.pop_back();
    char* endp = nullptr;
    const double w = std::strtod(num.c_str(), &endp);
    if (num.empty() || endp != num.c_str() + num.size() || !(w > 0) || w > 1000)
      return InvalidArgument("--power-levels: '" + item + "' is neither 'max' nor a power in watts (e.g. 1.5W)");
    char name[32];
    std::snprintf(name, sizeof name, "%gW", w);
    out.push_back({name, w});
    if (end == list.size()) break;
  }
  if (out.empty()) return InvalidArgument("--power-levels: no levels in '" + list + "'");
  return out;
}

Result<VariantSetReport> compile_variant_set(const ModelConfig& model, const ModelIdentity& id,
                                             const npu::TargetModel& target, const VariantSetOptions& o,
                                             const std::function<void(size_t, size_t)>& progress) {
  if (o.out_dir.empty()) return InvalidArgument("compile: no output directory (-o)");
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return IoError(o.out_dir + ": cannot create: " + ec.message());

  struct Variant {
    std::string phase;
    uint32_t rows;
    PowerLevel level;
    std::string precision;
  };
  std::vector<Variant> variants;
  for (const std::string& prec : o.precisions) {
    auto dt = dtype_from_name(prec);
    if (!dt || (*dt != DType::F16 && *dt != DType::Q8_0 && *dt != DType::Q4_0))
      return InvalidArgument("--precisions: '" + prec + "' is not one the NPU runs (f16, q8_0, q4_0)");
    for (const PowerLevel& lv : o.power_levels) {
      for (uint32_t b : o.buckets) variants.push_back({"prefill", b, lv, prec});
      if (o.decode) variants.push_back({"decode", 1, lv, prec});
    }
  }
  if (variants.empty()) return InvalidArgument("compile: nothing to compile (no buckets and no decode)");

  compile_cache::CacheWriter cache(o.out_dir);
  compile_cache::Manifest& m = cache.manifest();
  std::string quant;
  for (const std::string& p : o.precisions) quant += (quant.empty() ? "" : ",") + p;
  m.key = compile_cache::key_for(id.hash, target, quant);
  m.model_name = id.name;
  m.target_name = target.name;
  m.buckets = o.buckets;

  VariantSetReport rep;
  // A program compiled for one variant is validated (and timed) once even when other variants share it.
  std::map<std::string, double> validated;
  std::map<std::string, TimedRun> timed;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant& v = variants[vi];
    const auto t0 = std::chrono::steady_clock::now();
    CompileOptions co;
    co.target_path = o.target_path;
    co.power_cap_w = v.level.cap_w;
    co.fuse = o.fuse_clusters;
    auto compiled = compile_mlir(decoder_layer_mlir(model, int(v.rows), v.phase, v.precision), co);
    if (!compiled.ok())
      return Status(compiled.status().code(), v.phase + " " + std::to_string(v.rows) + " rows, " + v.level.name + ", " +
                                                  v.precision + ": " + compiled.status().message());
    const double compile_s = seconds_since(t0);
    rep.compile_seconds += compile_s;
    compile_cache::VariantEntry ve;
    ve.phase = v.phase;
    ve.rows = v.rows;
    ve.power_level = v.level.name;
    ve.power_cap_w = v.level.cap_w;
    ve.precision = v.precision;
    ve.compile_seconds = compile_s;
    for (const FallbackOp& f : compiled->fallbacks) ve.fallbacks.push_back({f.op, f.device, f.reason, f.switch_cost_s});
    for (CompiledProgram& p : compiled->programs) {
      ++rep.programs_compiled;
      // Building an entry is its validation (the rest is a few fields); named by shape before the
      // one hash that keys the validation and timing memos.
      const auto tv = std::chrono::steady_clock::now();
      p.program.name = name_for(p);
      const std::string key = program_key(p.program);
      Result<compile_cache::ProgramEntry> entry =
          p.kind == CompiledProgram::Kind::kKvAppend ? kv_entry(p, key, target, o.validate, 0x6b76 + vi, validated)
          : p.kind == CompiledProgram::Kind::kElementwise
              ? elementwise_entry(p, key, target, o.validate, 0x656c + vi, validated)
          : p.kind == CompiledProgram::Kind::kNormLinear
              ? norm_linear_entry(p, key, target, o, v.phase, v.rows, 0x6e6c + vi * 31, validated)
              : matmul_entry(p, key, target, o, v.phase, v.rows, 0x5eed + vi * 31, validated);
      if (!entry.ok()) return entry.status();
      rep.worst_error_ratio = std::max(rep.worst_error_ratio, entry->max_error_ratio);
      TANDEM_ASSIGN_OR_RETURN(std::string name, cache.add_program(p.program, *entry));
      ve.programs.push_back(name);
      ve.est_seconds += target.seconds(p.est_cycles);
      if (o.validate) {
        TANDEM_ASSIGN_OR_RETURN(TimedRun run, timed_run(p.program, key, target, timed));
        ve.exec_seconds = std::max(ve.exec_seconds, 0.0) + run.seconds;
        ve.ddr_bytes += run.ddr_bytes;
      }
      rep.validate_seconds += seconds_since(tv);
    }
    m.variants.push_back(std::move(ve));
    if (progress) progress(vi + 1, variants.size());
  }
  rep.programs_stored = m.programs.size();
  TANDEM_RETURN_IF_ERROR(cache.finish());
  rep.manifest = m;
  return rep;
}

}  // namespace tandem::compiler
