#include "tools/tandem/numeric_options.h"
#include "tools/tandem/session_factory.h"

#include <algorithm>
#include <sstream>

#include "compile_cache/cache.h"
#include "compile_cache/sha256.h"
#include "devices/npu/npu_device.h"
#include "devices/registry.h"
#include "runtime/graph_forward.h"
#include "planner/plan.h"
#include "runtime/hetero_forward.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/solver_plan.h"

namespace tandem::cli {

void DeviceOptions::add_to(CLI::App* sub) {
  // -ctk / -ctv as llama.cpp spells them: main() rewrites them to these (CLI11 takes one-letter
  // short options only).
  sub->add_option("--cache-type-k", cache_type_k, "KV cache type for keys: f32, f16, q8_0 (-ctk)")->capture_default_str();
  sub->add_option("--cache-type-v", cache_type_v, "KV cache type for values: f32, f16, q8_0 (-ctv)")->capture_default_str();
  sub->add_option("--devices", devices,
                  "any set of cpu, opencl, npu (e.g. opencl,npu or cpu,npu: the npu takes the NPU's role, the GPU or "
                  "else the cpu the GPU's; the cpu takes what the GPU cannot run)")
      ->capture_default_str();
  sub->add_option("--strategy", strategy,
                  "with an npu among several devices: plan (the solver's, from a profile of these devices cached per model "
                  "shapes in ~/.cache/tandem/profiles) or a fixed one: gpu-only npu-only layer weight-centric "
                  "activation-centric multi-tensor hybrid padding online-prepare npu-pipe")
      ->capture_default_str();
  sub->add_option("--ratio", ratio, "GPU share of weight rows for weight-centric and hybrid, 0..1")->transform(real_in({0, 1}))->capture_default_str();
  sub->add_option("--standard-lengths", standard_lengths,
                  std::string("NPU static sequence lengths (default: the compile cache's buckets with --npu-cache, else ") +
                      kDefaultStandardLengths + ")");
  sub->add_option("--sync", sync, "how device workers wait for kernels: fast (predicted sleep + flag polling) | blocking")
      ->capture_default_str();
  sub->add_option("--plan", plan, "with opencl,npu: a plan from `tandem plan -o` (per matmul and length)");
  sub->add_option("--npu-fault", npu_fault,
                  "inject NPU faults to drill the fallback: prepare | run | run:N (every Nth kernel); "
                  "also TANDEM_NPU_FAULT");
  sub->add_option("--npu-cache", npu_cache,
                  "with --devices opencl,npu: run the compiled programs of this compile cache (tandem compile -o) "
                  "where it has the shape; the cache must be for this model, target and compiler");
  sub->add_option("--npu-power-level", npu_power_level,
                  "with --npu-cache: run the programs compiled for this power level (tandem compile --power-levels; "
                  "default max)");
  sub->add_option("--trace", trace, "write a Chrome trace (Perfetto) of the device timeline to this file");
}

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

Result<PartitionOptions> partition_options(const std::string& strategy, double ratio, const std::string& lengths) {
  PartitionOptions p;
  TANDEM_ASSIGN_OR_RETURN(p.strategy, strategy_from_name(strategy));
  if (!(ratio >= 0.0 && ratio <= 1.0)) return InvalidArgument("--ratio: " + std::to_string(ratio) + " must be in [0, 1]");
  p.gpu_share = ratio;
  p.standard_lengths.clear();
  for (const std::string& s : split(lengths)) {
    int v = 0;
    try {
      v = std::stoi(s);
    } catch (...) {
      v = 0;
    }
    if (v <= 0 || v > 65536) return InvalidArgument("--standard-lengths: '" + s + "' is not a length");
    p.standard_lengths.push_back(v);
  }
  if (p.standard_lengths.empty()) return InvalidArgument("--standard-lengths: none given");
  return p;
}

Result<std::unique_ptr<Forward>> make_forward(std::shared_ptr<const Model> model, const DeviceOptions& d, int threads,
                                              int context, int max_batch, int sequences) {
  std::vector<std::string> names = split(d.devices);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.empty()) return InvalidArgument("--devices: '" + d.devices + "' names no device (cpu, opencl, npu)");
  KvTypes kv;
  TANDEM_ASSIGN_OR_RETURN(kv.k, kv_type_from_name(d.cache_type_k, "--cache-type-k"));
  TANDEM_ASSIGN_OR_RETURN(kv.v, kv_type_from_name(d.cache_type_v, "--cache-type-v"));
  // An npu alone runs as the NPU with the cpu as its host (HeteroForward adds it and says so):
  // every matmul the npu can take goes to it. Any device of the npu kind (the emulated npu, the
  // hexagon DSP) is one, by the registry's kind, not its name.
  auto is_npu = [](const std::string& n) { return devices::device_kind_of(n) == devices::DeviceKind::kNpu; };
  const bool npu_alone = names.size() == 1 && is_npu(names[0]);
  // The NPU's options need an npu: alone (the cpu its host) or beside a device that runs any shape.
  const bool npu_with_another =
      npu_alone || (names.size() > 1 && std::count_if(names.begin(), names.end(), is_npu) == 1);
  auto needs_npu = [&](const char* option, const std::string& value) {
    return InvalidArgument(std::string(option) + ": '" + value +
                           "' needs an npu in --devices (npu alone, or beside another device: opencl,npu or cpu,npu)");
  };
  if (!d.plan.empty() && !npu_with_another) return needs_npu("--plan", d.plan);
  if (!d.npu_fault.empty() && !npu_with_another) return needs_npu("--npu-fault", d.npu_fault);
  if (!d.npu_power_level.empty() && d.npu_cache.empty())
    return InvalidArgument("--npu-power-level: '" + d.npu_power_level + "' needs --npu-cache");
  if (!d.npu_cache.empty() && !npu_with_another) return needs_npu("--npu-cache", d.npu_cache);
  if (names.size() == 1 && !npu_alone) {
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<devices::Device> dev, devices::open_device(names[0], model, threads));
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<GraphForward> f,
                            GraphForward::create(model, std::move(dev), context, max_batch, kv, sequences));
    return std::unique_ptr<Forward>(std::move(f));
  }
  if (sequences > 1) {
    return InvalidArgument("--slots " + std::to_string(sequences) + ": several slots run on one device (--devices cpu or "
                           "opencl); --devices " + d.devices + " serves one slot");
  }
  HeteroOptions o;
  o.devices = names;
  if (!d.npu_cache.empty()) {
    // The cache must be for this model file, this NPU target and this compiler.
    if (d.model_file.empty()) return Internal("--npu-cache: the model file is unknown");
    TANDEM_ASSIGN_OR_RETURN(npu::TargetModel target, npu::TargetModel::load_default());
    TANDEM_ASSIGN_OR_RETURN(std::string model_hash, compile_cache::sha256_file(d.model_file));
    const compile_cache::CacheKey key = compile_cache::key_for(
        std::move(model_hash), target,
        model->layers().empty() ? "" : std::string(dtype_name(devices::NpuDevice::packed_format(model->layers()[0].wq.type))));
    TANDEM_ASSIGN_OR_RETURN(compile_cache::CompileCache cache, compile_cache::CompileCache::open(d.npu_cache, key));
    if (!d.npu_power_level.empty()) TANDEM_RETURN_IF_ERROR(cache.select_power_level(d.npu_power_level));
    o.npu_cache = std::make_shared<const compile_cache::CompileCache>(std::move(cache));
  }
  // The NPU's static lengths are the compile cache's buckets unless given: the compiled programs
  // then serve every standard length the partitioner asks for.
  std::string lengths = d.standard_lengths;
  if (lengths.empty() && o.npu_cache) {
    const std::vector<uint32_t>& buckets = o.npu_cache->manifest().buckets;
    for (size_t i = 0; i < buckets.size(); ++i) {
      if (buckets[i] == 0 || buckets[i] > 65536) {
        return InvalidArgument(o.npu_cache->dir() + "/manifest.json: field 'buckets[" + std::to_string(i) + "]' is " +
                               std::to_string(buckets[i]) + ", not a length the runtime runs (1..65536)");
      }
      lengths += (lengths.empty() ? "" : ",") + std::to_string(buckets[i]);
    }
  }
  if (lengths.empty()) lengths = kDefaultStandardLengths;
  // "plan" (the default): the solver's plan where it has an entry, hybrid at the --ratio elsewhere.
  const bool solver = d.strategy == "plan";
  TANDEM_ASSIGN_OR_RETURN(o.partition, partition_options(solver ? "hybrid" : d.strategy, d.ratio, lengths));
  // The compiler's placement with its programs: row ops beside the NPU's whole matmuls go with them.
  o.partition.npu_row_ops = o.npu_cache != nullptr;
  TANDEM_ASSIGN_OR_RETURN(o.sync, sync_mode_from_name(d.sync));
  if (npu_alone) {
    o.partition.strategy = Strategy::kNpuOnly;
  } else if (!d.plan.empty()) {
    TANDEM_ASSIGN_OR_RETURN(planner::Plan loaded, planner::Plan::load(d.plan));
    auto plan = std::make_shared<const planner::Plan>(std::move(loaded));
    const std::string summary = d.plan + " (--plan, from " + plan->source + ")\n";
    o.choose_plan = [plan, summary](const auto&, const auto&) -> Result<HeteroOptions::PlanChoice> {
      auto use = std::make_shared<planner::PlanUse>(plan);
      return HeteroOptions::PlanChoice{use->decider(), summary, [use] { return use->table(); }};
    };
  } else if (solver) {
    SolverPlanOptions sp;
    sp.threads = threads;
    sp.standard_lengths = o.partition.standard_lengths;
    sp.max_len = max_batch;
    sp.sync = o.sync;
    sp.cache_dir = user_cache_dir();
    sp.npu_cache = o.npu_cache;  // the plan is solved on the programs the npu will run
    o.choose_plan = solver_plan_chooser(model, sp);
  }
  o.npu_fault = d.npu_fault;
  o.context = context;
  o.max_batch = max_batch;
  o.n_threads = threads;
  o.kv_types = kv;
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<HeteroForward> f, HeteroForward::create(model, o));
  return std::unique_ptr<Forward>(std::move(f));
}

}  // namespace tandem::cli
