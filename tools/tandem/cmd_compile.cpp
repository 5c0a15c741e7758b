// `tandem compile (-m MODEL | --model-preset NAME) [--target T.json] [--buckets auto|LIST]
//  [--lengths DIST] [--power-levels LIST] [--precisions LIST] [--fuse-clusters] [--kv-layout L] [--plan PLAN] -o CACHE_DIR`: the NPU variant set
// of a model's decoder layer through the MLIR compiler, validated, into a compile cache.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <iostream>

#include <nlohmann/json.hpp>

#include "buckets/bucket_optimizer.h"
#include "buckets/layer_latency.h"
#include "compile_cache/sha256.h"
#include "compiler/driver/variant_set.h"
#include "compiler/driver/hexagon_lowering.h"
#include "core/interrupt.h"
#include "devices/npu/npu_device.h"
#include "model/gen_model.h"
#include "model/model.h"
#include "planner/plan.h"
#include "report/edgellm_report.h"
#include "runtime/partition.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/progress_bar.h"

namespace tandem::cli {

namespace {

Result<std::vector<uint32_t>> parse_bucket_list(const std::string& list) {
  std::vector<uint32_t> out;
  size_t start = 0;
  while (start < list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    char* e = nullptr;
    const long v = std::strtol(item.c_str(), &e, 10);
    if (item.empty() || e != item.c_str() + item.size() || v < 1 || v > 65536)
      return InvalidArgument("--buckets: '" + item + "' is not a row count in 1..65536 (or use 'auto')");
    if (!out.empty() && uint32_t(v) <= out.back()) return InvalidArgument("--buckets: boundaries must increase ('" + list + "')");
    out.push_back(uint32_t(v));
    start = end + 1;
  }
  if (out.empty()) return InvalidArgument("--buckets: empty list");
  return out;
}

std::string fmt(const char* f, double v) {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The NPU's weight-split slices a plan runs (weight-centric and hybrid ranges), at the prefill
// buckets those ranges can ask for -- every bucket up to the range's longest chunk and the first at
// or past it (a remainder is padded up to a bucket) -- and at the decode row when the range starts
// at 1. Slices that are the whole weight (or none of it) are the layer's own programs.
Result<std::vector<compiler::SplitSlice>> split_slices_of(const planner::Plan& plan, const std::string& file, const Model& model,
                                                         const std::vector<uint32_t>& buckets, bool decode) {
  std::map<std::pair<uint32_t, uint32_t>, std::set<uint32_t>> rows;  // (out, in) -> rows
  const std::vector<planner::MatmulShape> shapes = planner::splittable_shapes(model);
  for (const planner::PlanOp& op : plan.ops) {
    const bool known = std::any_of(shapes.begin(), shapes.end(), [&](const auto& s) { return s.out == op.out && s.in == op.in; });
    if (!known)
      return InvalidArgument(file + ": op '" + op.name + "' (" + std::to_string(op.out) + "x" + std::to_string(op.in) +
                             ") is not a matmul of this model (a plan made for another model?)");
    for (const planner::PlanRange& r : op.ranges) {
      if (!splits_weight_rows(r.strategy)) continue;
      const int64_t npu = npu_rows_of_split(op.out, r.gpu_share);
      if (npu <= 0 || npu >= op.out) continue;
      std::set<uint32_t>& at = rows[{uint32_t(npu), uint32_t(op.in)}];
      if (r.n_min <= 1 && decode) at.insert(1);
      if (r.n_max < 2) continue;
      for (uint32_t b : buckets) {
        if (int64_t(b) <= r.n_max) at.insert(b);
        if (int64_t(b) >= r.n_max) {
          at.insert(b);
          break;
        }
      }
    }
  }
  std::vector<compiler::SplitSlice> out;
  for (auto& [shape, at] : rows)
    if (!at.empty()) out.push_back({shape.first, shape.second, std::move(at)});
  return out;
}

}  // namespace

Command add_compile(CLI::App& app) {
  struct Opts {
    std::string model, preset, target, buckets = "auto", lengths = "heavy-tail", power = "max", precisions, plan, out;
    int bucket_count = 6;
    int validate_rows = 4;
    bool no_validate = false, no_decode = false, json = false, report = false, fuse = false;
    std::string kv_layout = "auto";
    std::string hexagon = "auto";
    int report_rows = 512;
    int jobs = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("compile", "Compile a model's NPU variant set (MLIR) into a compile cache");
  auto* m = sub->add_option("-m,--model", o->model, "GGUF model file");
  sub->add_option("--model-preset", o->preset, "a model shape by name (no file needed)")->excludes(m);
  sub->add_option("--target", o->target, "NPU target JSON (default: data/npu/hexagon-v75.json)");
  sub->add_option("--buckets", o->buckets, "prefill length buckets: auto (optimized for --lengths) or a list 128,512,...")
      ->capture_default_str();
  sub->add_option("--lengths", o->lengths, "length distribution for --buckets auto (see tandem buckets)")->capture_default_str();
  sub->add_option("--bucket-count", o->bucket_count, "buckets for --buckets auto, 1..64")->transform(integer_in(1, 64))->capture_default_str();
  sub->add_option("--power-levels", o->power, "power levels: max and/or NPU caps in watts, e.g. max,1.5W")->capture_default_str();
  sub->add_option("--precisions", o->precisions, "weight formats to compile (f16,q8_0,q4_0; default: the one the npu packs the model's weights in, f16 for f32/bf16/K-quants; presets q4_0)");
  sub->add_option("--plan", o->plan,
                  "a solver plan (tandem plan -o): also compile the NPU's slice of every weight split it uses, so "
                  "`run --plan` binds compiled programs for them");
  sub->add_option("--validate-rows", o->validate_rows, "rows per edge check compared with the reference, 1..65536")->transform(integer_in(1, 65536))->capture_default_str();
  sub->add_flag("--no-validate", o->no_validate, "skip the differential validation");
  sub->add_option("-j,--jobs", o->jobs, "threads checking and timing programs while the next variant compiles, 0..256 (0: one per core)")
      ->transform(integer_in(0, 256))
      ->capture_default_str();
  sub->add_flag("--no-decode", o->no_decode, "prefill variants only");
  sub->add_flag("--fuse-clusters", o->fuse,
                "emit each rmsnorm and the linears of its fusion cluster as one program (norm_linear); "
                "tandem run launches it where the NPU runs the whole cluster, the ops one by one elsewhere");
  sub->add_option("--kv-layout", o->kv_layout,
                  "KV cache layout of the appends: auto (each phase's on the cost model), token_major or head_major "
                  "(one layout: every append of a run on an npu that owns the KV binds)")
      ->check(CLI::IsMember({"auto", "token_major", "head_major"}))
      ->capture_default_str();
  sub->add_option("--hexagon", o->hexagon,
                  "lower the matmul programs to Hexagon v66 HVX objects (clang-19, ld.lld-19): auto (where they are), on, off")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "print the summary as JSON");
  sub->add_flag("--report", o->report,
                "instead of compiling: EdgeLLM-MLIR's tables on this compiler's cost model (TCM 4/8/16/32 MB, "
                "fusion strategies, buckets, ablations) into -o DIR");
  sub->add_option("--report-rows", o->report_rows, "prefill rows of the report's per-layer table, 1..65536")->transform(integer_in(1, 65536))->capture_default_str();
  sub->add_option("-o,--out", o->out, "compile cache directory")->required();
  return {sub, [o]() -> Status {
            if (o->report) {
              if (!o->model.empty()) return InvalidArgument("compile --report: give --model-preset NAME (the report needs no weights)");
              report::EdgeLlmReportOptions ro;
              if (!o->preset.empty()) ro.model_preset = o->preset;
              ro.target_path = o->target;
              ro.lengths = o->lengths;
              ro.bucket_count = o->bucket_count;
              ro.rows = o->report_rows;
              TANDEM_ASSIGN_OR_RETURN(report::EdgeLlmReport rep, report::build_edgellm_report(ro));
              TANDEM_RETURN_IF_ERROR(report::write_report_files(rep.files, o->out));
              std::printf("%swrote %s/report.md, report.json and %zu SVG plots\n", rep.summary.c_str(), o->out.c_str(),
                          rep.files.size() - 2);
              return Status::Ok();
            }
            if (o->model.empty() == o->preset.empty()) return InvalidArgument("compile: give -m MODEL or --model-preset NAME");
            if (o->bucket_count < 1 || o->bucket_count > 64) return InvalidArgument("--bucket-count: must be in 1..64");
            if (o->validate_rows < 1) return InvalidArgument("--validate-rows: must be >= 1");
            if (o->jobs < 0 || o->jobs > 256) return InvalidArgument("--jobs: must be in 0..256, got " + std::to_string(o->jobs));
            TANDEM_ASSIGN_OR_RETURN(npu::TargetModel t, o->target.empty() ? npu::TargetModel::load_default() : npu::TargetModel::load(o->target));
            std::shared_ptr<Model> model;
            compiler::ModelIdentity id;
            std::string default_precision = "q4_0";
            if (!o->model.empty()) {
              TANDEM_ASSIGN_OR_RETURN(model, Model::load(o->model));
              TANDEM_ASSIGN_OR_RETURN(id.hash, compile_cache::sha256_file(o->model));
              id.name = o->model;
              // The format the npu packs the model's weights in (an f32, bf16 or K-quant model: f16) is
              // the one it asks the compile cache for.
              const DType wt = model->layers().empty() ? DType::Q4_0 : model->layers()[0].wq.type;
              default_precision = std::string(dtype_name(devices::NpuDevice::packed_format(wt)));
            } else {
              TANDEM_ASSIGN_OR_RETURN(model, shape_only_preset(o->preset, DType::Q4_0));
              id.name = o->preset;
              id.hash = compile_cache::sha256_hex("preset " + o->preset + ": " + model->config().describe());
            }
            compiler::VariantSetOptions vo;
            vo.target_path = o->target;
            vo.out_dir = o->out;
            vo.decode = !o->no_decode;
            vo.validate = !o->no_validate;
            vo.validate_rows = uint32_t(o->validate_rows);
            vo.fuse_clusters = o->fuse;
            vo.kv_layout = o->kv_layout;
            TANDEM_RETURN_IF_ERROR(compiler::parse_hexagon_mode(o->hexagon).status());
            vo.hexagon = o->hexagon;
            vo.jobs = unsigned(o->jobs);
            vo.precisions = split(o->precisions.empty() ? default_precision : o->precisions);
            TANDEM_ASSIGN_OR_RETURN(vo.power_levels, compiler::parse_power_levels(o->power));
            // A prefill chunk never holds more rows than the model's context: longer requests are
            // asked as the context, and a bucket past it could not append to the KV cache.
            const int64_t context = model->config().context_length;
            if (o->buckets == "auto") {
              TANDEM_ASSIGN_OR_RETURN(buckets::LengthDistribution requested, buckets::LengthDistribution::parse(o->lengths));
              const buckets::LengthDistribution d = requested.capped(context);
              const auto layer = buckets::npu_layer_latency(t, *model);
              buckets::BucketObjective obj;
              obj.latency = [&](int64_t b) { return layer(b) * 1e3; };
              TANDEM_ASSIGN_OR_RETURN(buckets::BucketSet set,
                                      buckets::optimize_buckets(d, buckets::candidate_boundaries(d, 128), o->bucket_count, obj));
              for (int64_t b : set.boundaries) vo.buckets.push_back(uint32_t(b));
            } else {
              TANDEM_ASSIGN_OR_RETURN(vo.buckets, parse_bucket_list(o->buckets));
              if (int64_t(vo.buckets.back()) > context) {
                return InvalidArgument("--buckets: " + std::to_string(vo.buckets.back()) + " rows exceed the model's context of " +
                                       std::to_string(context) + " tokens (" + model->config().arch_name + ".context_length)");
              }
            }
            if (!o->plan.empty()) {
              TANDEM_ASSIGN_OR_RETURN(planner::Plan plan, planner::Plan::load(o->plan));
              TANDEM_ASSIGN_OR_RETURN(vo.split_slices, split_slices_of(plan, o->plan, *model, vo.buckets, vo.decode));
            }
            ProgressBar bar("compiling variants");
            InterruptScope interruptible;  // Ctrl-C stops between variants and leaves no half cache
            TANDEM_ASSIGN_OR_RETURN(compiler::VariantSetReport rep,
                                    compiler::compile_variant_set(model->config(), id, t, vo,
                                                                  [&](size_t done, size_t total) { bar.update(double(done) / double(total)); }));
            const auto& man = rep.manifest;
            const size_t fused = size_t(std::count_if(man.programs.begin(), man.programs.end(),
                                                      [](const auto& p) { return p.kind == "norm_linear"; }));
            if (o->json) {
              nlohmann::json j = {{"cache", o->out},           {"model", man.model_name},
                                  {"target", man.target_name}, {"buckets", man.buckets},
                                  {"variants", man.variants.size()}, {"programs_compiled", rep.programs_compiled},
                                  {"programs_stored", rep.programs_stored}, {"compile_seconds", rep.compile_seconds},
                                  {"validate_seconds", rep.validate_seconds}, {"wall_seconds", rep.wall_seconds},
                                  {"jobs", rep.jobs}, {"worst_error_ratio", rep.worst_error_ratio},
                                  {"fused_programs", fused}, {"split_programs", rep.split_programs},
                                  {"key_digest", man.key.digest()},
                                  {"hexagon_programs", rep.hexagon_built ? int64_t(rep.hexagon_programs) : int64_t(-1)},
                                  {"hexagon_target", rep.hexagon_built ? man.hexagon.target : std::string()},
                                  {"hexagon_note", rep.hexagon_note}};
              std::cout << j.dump() << "\n";
              return Status::Ok();
            }
            std::printf("compiled %s for %s into %s (key %s)\n", man.model_name.c_str(), man.target_name.c_str(), o->out.c_str(),
                        man.key.digest().substr(0, 16).c_str());
            std::printf("| %-7s | %5s | %-6s | %-9s | %8s | %13s | %12s | %10s | %9s | %s\n", "phase", "rows", "power", "precision",
                        "programs", "est. layer ms", "executor ms", "DDR MB", "compile s", "fallback ops");
            std::printf("| %-7s | %5s | %-6s | %-9s | %8s | %13s | %12s | %10s | %9s | %s\n", "-------", "----:", "------", "---------",
                        "-------:", "------------:", "-----------:", "---------:", "--------:", "---");
            for (const auto& v : man.variants) {
              // "rmsnorm x2, rope x2 -> gpu; sample -> cpu"
              std::map<std::string, std::vector<std::pair<std::string, int>>> by_device;
              for (const auto& f : v.fallbacks) {
                auto& ops = by_device[f.device];
                const std::string op = f.op.substr(f.op.find('.') + 1);
                auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& e) { return e.first == op; });
                if (it == ops.end()) ops.push_back({op, 1});
                else ++it->second;
              }
              std::string fb;
              for (const auto& [dev, ops] : by_device) {
                fb += fb.empty() ? "" : "; ";
                for (size_t i = 0; i < ops.size(); ++i)
                  fb += (i ? ", " : "") + ops[i].first + (ops[i].second > 1 ? " x" + std::to_string(ops[i].second) : "");
                fb += " -> " + dev;
              }
              // Timed on the executor with the validation (--no-validate: not timed).
              const std::string exec = v.exec_seconds >= 0 ? fmt("%.3f", v.exec_seconds * 1e3) : "-";
              const std::string ddr = v.exec_seconds >= 0 ? fmt("%.1f", double(v.ddr_bytes) / 1e6) : "-";
              std::printf("| %-7s | %5u | %-6s | %-9s | %8zu | %13.3f | %12s | %10s | %9.2f | %s\n", v.phase.c_str(), v.rows,
                          v.power_level.c_str(), v.precision.c_str(), v.programs.size(), v.est_seconds * 1e3, exec.c_str(),
                          ddr.c_str(), v.compile_seconds, fb.c_str());
            }
            if (fused > 0) std::printf("%zu distinct fused programs (rmsnorm + the linears reading it)\n", fused);
            if (!vo.split_slices.empty()) {
              std::string shapes;
              for (const compiler::SplitSlice& sl : vo.split_slices) {
                std::string at;
                for (uint32_t r : sl.rows) at += (at.empty() ? "" : ",") + std::to_string(r);
                shapes += (shapes.empty() ? "" : "; ") + std::to_string(sl.out) + "x" + std::to_string(sl.in) + " at rows " + at;
              }
              std::printf("%zu programs for the NPU's share of the weight splits in %s: %s\n", rep.split_programs,
                          o->plan.c_str(), shapes.c_str());
            }
            if (rep.hexagon_built)
              std::printf("hexagon: %zu programs lowered to %s objects, linked into %s/%s (%.1f s)%s%s\n", rep.hexagon_programs,
                          man.hexagon.target.c_str(), o->out.c_str(), man.hexagon.binary.file.c_str(), rep.hexagon_seconds,
                          rep.hexagon_note.empty() ? "" : "; ", rep.hexagon_note.c_str());
            else
              std::printf("hexagon: %s\n", rep.hexagon_note.c_str());
            const std::string checked = rep.jobs == 0 ? std::string("not validated")
                                                      : fmt("validation %.1f s", rep.validate_seconds) + " on " +
                                                            std::to_string(rep.jobs) + (rep.jobs == 1 ? " thread" : " threads");
            std::printf("%zu variants, %zu programs (%zu distinct files); compile %.1f s, %s, %.1f s wall (worst error %.3f of threshold)\n",
                        man.variants.size(), rep.programs_compiled, rep.programs_stored, rep.compile_seconds, checked.c_str(),
                        rep.wall_seconds, rep.worst_error_ratio);
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
