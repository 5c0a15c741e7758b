#include "compiler/driver/variant_set.h"
#include "compiler/driver/hexagon_lowering.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "compile_cache/cache.h"
#include "compile_cache/sha256.h"
#include "compiler/api/npu_compiler.h"
#include "compiler/driver/job_queue.h"
#include "core/dtype.h"
#include "core/interrupt.h"
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

// Checks a matmul-schedule program (a matmul or a fused norm + projections) at the bucket edges:
// every row valid (the bucket full), and the shortest length the bucket serves (one row past the
// previous bucket; 1 for the first bucket and for decode), the rest of the rows padding. The
// worst error ratio.
Result<double> check_at_bucket_edges(const CompiledProgram& p, const VariantSetOptions& o, const std::string& phase,
                                     uint32_t rows,
                                     const std::function<Result<npu::oplib::MatmulCheck>(uint32_t)>& check) {
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
  return worst;
}

// A KV append on the functional executor: appends at the cache's first token, at its last slot
// (the bucket edge), and starting one token before a page boundary (the append switches pages),
// each compared byte for byte with the layout. A copy is exact or wrong: ratio 0.
Result<double> check_kv_append(const CompiledProgram& p, const npu::TargetModel& target, uint64_t seed) {
  const npu::oplib::KvGeometry& g = p.kv.geometry;
  const uint32_t last = g.capacity - p.kv.rows;
  for (uint32_t at : {0u, last, std::min(last, g.page_tokens - 1)}) {
    TANDEM_ASSIGN_OR_RETURN(auto c, npu::oplib::check_kv_append_program(p.program, g, p.kv.rows, at, seed + at, target));
    if (!c.ok())
      return Internal("validation failed: " + p.program.name + " (" + p.kv.phase + " KV append of " +
                      std::to_string(p.kv.rows) + " rows at position " + std::to_string(at) + "): " +
                      std::to_string(c.wrong) + " of " + std::to_string(c.written) + " cache bytes wrong, " +
                      std::to_string(c.clobbered) + " bytes outside the appended tokens changed");
  }
  return 0.0;
}

// An elementwise program against the fp64 reference on random rows. Padding rows of a bucket are
// independent rows here (each row is computed alone).
Result<double> check_elementwise(const CompiledProgram& p, const npu::TargetModel& target, uint64_t seed) {
  const CompiledElementwise& el = p.elementwise;
  TANDEM_ASSIGN_OR_RETURN(auto c, npu::oplib::check_elementwise_program(p.program, el.op, el.rows, el.cols, el.eps, seed, target));
  if (!c.ok())
    return Internal("validation failed: " + p.program.name + ": " + std::to_string(c.failures) + " of " +
                    std::to_string(c.outputs_checked) + " outputs over the error threshold (max ratio " +
                    std::to_string(c.max_error_ratio) + ")" + (c.wrote_past_output ? ", wrote past its output" : ""));
  return c.max_error_ratio;
}

struct TimedRun {
  double seconds = 0;
  uint64_t ddr_bytes = 0;
};

// What the checks of one distinct program found: its worst error ratio against the reference and
// its run on the executor's timing model (its modeled time and DDR traffic; no operands needed).
struct Checked {
  double worst_error = 0;
  TimedRun run;
  double seconds = 0;  // spent checking and timing it
};

// The differential checks of the first variant (variant_index) that compiled program p, then its
// timed run. Thread-safe: every check builds its own executor and operands.
Result<Checked> check_program(const CompiledProgram& p, const npu::TargetModel& target, const VariantSetOptions& o,
                              const std::string& phase, uint32_t rows, size_t variant_index) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t vi = variant_index;
  Checked out;
  switch (p.kind) {
    case CompiledProgram::Kind::kKvAppend: {
      TANDEM_ASSIGN_OR_RETURN(out.worst_error, check_kv_append(p, target, 0x6b76 + vi));
      break;
    }
    case CompiledProgram::Kind::kElementwise: {
      TANDEM_ASSIGN_OR_RETURN(out.worst_error, check_elementwise(p, target, 0x656c + vi));
      break;
    }
    case CompiledProgram::Kind::kNormLinear: {
      const npu::oplib::NormLinearSpec& s = p.norm_linear;
      TANDEM_ASSIGN_OR_RETURN(out.worst_error, check_at_bucket_edges(p, o, phase, rows, [&](uint32_t valid) {
        return npu::oplib::check_norm_linear_program(p.program, s, *dtype_from_name(p.source_quant), valid,
                                                     0x6e6c + vi * 31 + valid, target, o.validate_rows);
      }));
      break;
    }
    case CompiledProgram::Kind::kMatmul: {
      TANDEM_ASSIGN_OR_RETURN(out.worst_error, check_at_bucket_edges(p, o, phase, rows, [&](uint32_t valid) {
        return npu::oplib::check_matmul_program(p.program, p.spec, *dtype_from_name(p.source_quant), valid,
                                                0x5eed + vi * 31 + valid, target, o.validate_rows);
      }));
      break;
    }
  }
  npu::Executor ex(target);
  TANDEM_ASSIGN_OR_RETURN(npu::ExecReport r, ex.run(p.program, {false, true}));
  out.run = {r.seconds, r.dma_bytes_in + r.dma_bytes_out};
  out.seconds = seconds_since(t0);
  return out;
}

// The manifest fields of a matmul schedule (a plain matmul's or a fused program's).
compile_cache::ProgramEntry schedule_entry(const npu::oplib::MatmulSpec& spec, const CompiledProgram& p,
                                           const npu::TargetModel& target) {
  compile_cache::ProgramEntry e;
  e.rows = spec.n;
  e.in = spec.in;
  e.format = std::string(dtype_name(spec.wtype));
  e.source_quant = p.source_quant;
  e.order = npu::oplib::matmul_order_name(spec.order);
  e.double_buffer = spec.double_buffer;
  e.double_buffer_out = spec.double_buffer_out;
  e.arrays = npu::oplib::matmul_arrays(spec, target);
  e.est_cycles = p.est_cycles;
  return e;
}

// A program's manifest entry (its error ratio is filled in from its checks).
compile_cache::ProgramEntry entry_of(const CompiledProgram& p, const npu::TargetModel& target) {
  compile_cache::ProgramEntry e;
  switch (p.kind) {
    case CompiledProgram::Kind::kKvAppend: {
      const npu::oplib::KvGeometry& g = p.kv.geometry;
      e.kind = "kv_append";
      e.rows = p.kv.rows;
      e.kv = {g.capacity, g.heads, g.head_dim, g.page_tokens, std::string(npu::oplib::kv_layout_name(g.layout)), p.kv.phase};
      e.est_cycles = p.est_cycles;
      break;
    }
    case CompiledProgram::Kind::kElementwise: {
      const CompiledElementwise& el = p.elementwise;
      e.kind = "elementwise";
      e.rows = el.rows;
      e.elementwise = {std::string(npu::oplib::elt_op_name(el.op)), el.cols, double(el.eps)};
      e.est_cycles = p.est_cycles;
      break;
    }
    case CompiledProgram::Kind::kNormLinear: {
      const npu::oplib::NormLinearSpec& s = p.norm_linear;
      e = schedule_entry(s.base, p, target);
      e.kind = "norm_linear";
      e.norm_linear = {s.outs, double(s.eps)};
      break;
    }
    case CompiledProgram::Kind::kMatmul: {
      e = schedule_entry(p.spec, p, target);
      e.out = p.spec.out;
      break;
    }
  }
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
  const auto t_start = std::chrono::steady_clock::now();

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
  rep.jobs = !o.validate ? 0 : o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  // Each distinct program (by its bytes) is checked and timed once, on the worker threads, while
  // this thread compiles the next variant; a variant is written when its programs' checks are in.
  // Checks are submitted in variant order, so which variant checks a shared program (and with
  // which seed) does not depend on the threads.
  JobQueue<Result<Checked>> workers(rep.jobs);
  std::map<std::string, std::shared_future<Result<Checked>>> checks;
  std::set<std::string> seen;  // keys of the programs compiled so far
  struct Compiled {
    size_t index;
    compile_cache::VariantEntry entry;
    std::vector<std::shared_ptr<const CompiledProgram>> programs;
    // What the checks and the cache know a program by: the SHA-256 of its bytes (named by shape,
    // so identical programs of other variants, or of k and v, share it).
    std::vector<std::string> keys;
    // Its bytes, kept from hashing to writing at a key's first occurrence (later ones are stored).
    std::vector<std::vector<uint8_t>> bytes;
  };
  auto write = [&](Compiled& c) -> Status {
    compile_cache::VariantEntry& ve = c.entry;
    for (size_t i = 0; i < c.programs.size(); ++i) {
      const CompiledProgram& p = *c.programs[i];
      compile_cache::ProgramEntry e = entry_of(p, target);
      e.max_error_ratio = -1;
      if (o.validate) {
        const Result<Checked>& checked = checks.at(c.keys[i]).get();
        if (!checked.ok()) return checked.status();
        e.max_error_ratio = checked->worst_error;
        ve.exec_seconds = std::max(ve.exec_seconds, 0.0) + checked->run.seconds;
        ve.ddr_bytes += checked->run.ddr_bytes;
      }
      rep.worst_error_ratio = std::max(rep.worst_error_ratio, e.max_error_ratio);
      std::optional<std::string> name = cache.stored(c.keys[i], e);
      if (!name) {
        Result<std::string> added = c.bytes[i].empty() ? cache.add_program(p.program, e)
                                                       : cache.add_serialized(p.program.name, c.bytes[i], c.keys[i], e);
        if (!added.ok()) return added.status();
        name = *added;
      }
      c.bytes[i] = {};
      ve.programs.push_back(*name);
      ve.est_seconds += target.seconds(p.est_cycles);
    }
    m.variants.push_back(std::move(ve));
    if (progress) progress(c.index + 1, variants.size());
    return Status::Ok();
  };

  std::optional<Compiled> in_flight;  // compiled, its checks running
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    // Ctrl-C (an InterruptScope in the caller): stop between variants; the writer removes what it
    // wrote, so the folder keeps its old cache or none.
    if (interrupted()) return IoError(o.out_dir + ": compile interrupted; no cache written");
    const Variant& v = variants[vi];
    const auto t0 = std::chrono::steady_clock::now();
    CompileOptions co;
    co.target_path = o.target_path;
    co.power_cap_w = v.level.cap_w;
    co.fuse = o.fuse_clusters;
    co.kv_layout = o.kv_layout;
    auto compiled = compile_layer(model, int(v.rows), v.phase, v.precision, co);
    if (!compiled.ok())
      return Status(compiled.status().code(), v.phase + " " + std::to_string(v.rows) + " rows, " + v.level.name + ", " +
                                                  v.precision + ": " + compiled.status().message());
    const double compile_s = seconds_since(t0);
    rep.compile_seconds += compile_s;
    Compiled c{vi, {}, {}, {}, {}};
    c.entry.phase = v.phase;
    c.entry.rows = v.rows;
    c.entry.power_level = v.level.name;
    c.entry.power_cap_w = v.level.cap_w;
    c.entry.precision = v.precision;
    c.entry.compile_seconds = compile_s;
    for (const FallbackOp& f : compiled->fallbacks) c.entry.fallbacks.push_back({f.op, f.device, f.reason, f.switch_cost_s});
    // The plan's weight-split slices at this variant's rows, as programs of the variant.
    for (const SplitSlice& sl : o.split_slices) {
      if (!sl.rows.count(v.rows)) continue;
      const auto ts = std::chrono::steady_clock::now();
      auto slice = compile_linear(v.rows, sl.in, sl.out, v.precision, co);
      if (!slice.ok())
        return Status(slice.status().code(), v.phase + " " + std::to_string(v.rows) + " rows, " + v.level.name + ", " +
                                                 v.precision + ", split slice " + std::to_string(sl.out) + "x" +
                                                 std::to_string(sl.in) + ": " + slice.status().message());
      const double slice_s = seconds_since(ts);
      rep.compile_seconds += slice_s;
      c.entry.compile_seconds += slice_s;
      for (CompiledProgram& p : slice->programs) {
        if (p.kind != CompiledProgram::Kind::kMatmul)
          return Internal("split slice " + std::to_string(sl.out) + "x" + std::to_string(sl.in) + " compiled to a " +
                          "program that is not a matmul");
        compiled->programs.push_back(std::move(p));
        ++rep.split_programs;
      }
    }
    for (CompiledProgram& p : compiled->programs) {
      ++rep.programs_compiled;
      // Named by shape before the one serialization and hash that key the checks and the cache.
      p.program.name = name_for(p);
      auto shared = std::make_shared<const CompiledProgram>(std::move(p));
      std::vector<uint8_t> bytes = npu::serialize(shared->program);
      std::string key = compile_cache::sha256_hex(bytes.data(), bytes.size());
      const bool first = seen.insert(key).second;
      if (o.validate && first)
        checks[key] = workers.submit([shared, &target, &o, phase = v.phase, rows = v.rows, vi] {
          return check_program(*shared, target, o, phase, rows, vi);
        });
      c.programs.push_back(std::move(shared));
      c.keys.push_back(std::move(key));
      c.bytes.push_back(first ? std::move(bytes) : std::vector<uint8_t>{});
    }
    // Write the previous variant while this one's checks start (at most two variants in memory).
    if (in_flight) TANDEM_RETURN_IF_ERROR(write(*in_flight));
    in_flight = std::move(c);
  }
  TANDEM_RETURN_IF_ERROR(write(*in_flight));
  for (const auto& [key, checked] : checks) rep.validate_seconds += checked.get()->seconds;
  rep.programs_stored = m.programs.size();
  TANDEM_ASSIGN_OR_RETURN(const HexagonMode hexagon_mode, parse_hexagon_mode(o.hexagon));
  TANDEM_ASSIGN_OR_RETURN(const HexagonLoweringReport hx, lower_to_hexagon(cache, o.out_dir, hexagon_mode, o.jobs ? o.jobs : 2));
  rep.hexagon_built = hx.built;
  rep.hexagon_programs = hx.programs;
  rep.hexagon_seconds = hx.seconds;
  rep.hexagon_note = hx.note;
  TANDEM_RETURN_IF_ERROR(cache.finish());
  rep.manifest = m;
  rep.wall_seconds = seconds_since(t_start);
  return rep;
}

}  // namespace tandem::compiler
