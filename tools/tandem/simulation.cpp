#include "tools/tandem/simulation.h"

#include <algorithm>
#include <memory>

#include "compile_cache/sha256.h"
#include "devices/npu/npu_device.h"
#include "planner/perf_model.h"
#include "planner/plan.h"
#include "planner/profiler.h"
#include "runtime/device_roles.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

namespace {

// The compile cache for this model and the SoC's NPU target (a stale cache is refused, naming what
// differs: the model, the target or the compiler).
Result<std::shared_ptr<const compile_cache::CompileCache>> open_npu_cache(const Model& model, const sim::SocModel& soc,
                                                                          const SimulationRequest& q) {
  const sim::ComputeUnit* npu = nullptr;
  for (const sim::ComputeUnit& u : soc.units)
    if (u.static_graphs()) npu = &u;
  if (!npu) return InvalidArgument("--npu-cache: " + soc.name + " has no NPU unit to run compiled programs");
  std::string hash;
  if (!q.model_file.empty()) {
    TANDEM_ASSIGN_OR_RETURN(hash, compile_cache::sha256_file(q.model_file));
  } else if (!q.model_preset.empty()) {
    hash = compile_cache::sha256_hex("preset " + q.model_preset + ": " + model.config().describe());  // as tandem compile keys it
  } else {
    return Internal("--npu-cache: the model's file or preset is unknown");
  }
  // The format the npu packs the weights in is the one the cache must hold (tandem compile's default).
  const std::string quant =
      model.layers().empty() ? "" : std::string(dtype_name(devices::NpuDevice::packed_format(model.layers()[0].wq.type)));
  TANDEM_ASSIGN_OR_RETURN(compile_cache::CompileCache cache,
                          compile_cache::CompileCache::open(q.npu_cache, compile_cache::key_for(hash, npu->npu.target, quant)));
  if (!q.npu_power_level.empty()) TANDEM_RETURN_IF_ERROR(cache.select_power_level(q.npu_power_level));
  return std::make_shared<const compile_cache::CompileCache>(std::move(cache));
}

}  // namespace

Result<Simulation> simulate_request(const Model& model, const SimulationRequest& q) {
  TANDEM_ASSIGN_OR_RETURN(sim::SocModel soc, sim::SocModel::load_named(q.soc));
  Simulation out;
  out.soc = soc.name;
  sim::SimulateOptions so;
  // The solver by default: the SoC model is profiled over the model's splittable matmuls and
  // every matmul takes the plan's choice for its length (what `profile` + `plan` + `--plan` do).
  const bool solve_now = q.strategy == "plan" && q.plan.empty();
  if (!q.npu_power_level.empty() && q.npu_cache.empty())
    return InvalidArgument("--npu-power-level: '" + q.npu_power_level + "' needs --npu-cache");
  std::string lengths = q.standard_lengths;
  if (!q.npu_cache.empty()) {
    TANDEM_ASSIGN_OR_RETURN(so.npu_cache, open_npu_cache(model, soc, q));
    // The NPU's static lengths are the cache's buckets unless given, as in a run.
    if (lengths.empty())
      for (uint32_t b : so.npu_cache->manifest().buckets) lengths += (lengths.empty() ? "" : ",") + std::to_string(b);
  }
  if (lengths.empty()) lengths = kDefaultStandardLengths;
  TANDEM_ASSIGN_OR_RETURN(so.partition, partition_options(q.strategy == "plan" ? "hybrid" : q.strategy, q.ratio, lengths));
  so.partition.npu_row_ops = so.npu_cache != nullptr;  // the compiler's placement, as in a run
  // The SoC's units take the roles (a SoC without an npu runs every matmul on its GPU's role).
  TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, soc.roles());
  roles.apply_to(so.partition);
  // copy-finish: the fast-sync ablation's baseline (blocking waits, clFinish after every GPU
  // kernel, host copies of tensors crossing units), which only the simulator models.
  so.copy_and_finish_baseline = q.sync == "copy-finish";
  TANDEM_ASSIGN_OR_RETURN(so.sync, sync_mode_from_name(so.copy_and_finish_baseline ? "blocking" : q.sync));
  out.strategy = q.strategy;
  if (!q.plan.empty()) {
    TANDEM_ASSIGN_OR_RETURN(planner::Plan plan, planner::Plan::load(q.plan));
    so.partition.decider = planner::decider_from_plan(std::make_shared<const planner::Plan>(std::move(plan)));
    out.strategy = "plan " + q.plan;
  } else if (solve_now && roles.npu.empty()) {
    so.partition.strategy = Strategy::kGpuOnly;  // nothing to split across: one unit runs every matmul
    out.strategy = "gpu-only (no npu unit)";
  } else if (solve_now) {
    planner::ProfileSpace space;
    space.shapes = planner::splittable_shapes(model);
    space.standard_lengths = so.partition.standard_lengths;
    space.npu_cache = so.npu_cache;
    TANDEM_ASSIGN_OR_RETURN(planner::CostDb cost, planner::profile_soc(soc, space));
    const planner::PerfModels perf(cost);
    const int64_t max_len =
        std::max<int64_t>(q.prompt, *std::max_element(space.standard_lengths.begin(), space.standard_lengths.end()));
    TANDEM_ASSIGN_OR_RETURN(planner::Plan plan, planner::build_plan(perf, cost, space.shapes, max_len, so.sync));
    so.partition.decider = planner::decider_from_plan(std::make_shared<const planner::Plan>(std::move(plan)));
    out.strategy = "plan (solved for " + soc.name + ")";
  }
  so.prompt = q.prompt;
  so.gen = q.gen;
  so.trace = q.trace;
  TANDEM_ASSIGN_OR_RETURN(out.result, sim::simulate(model, soc, so));
  return out;
}

}  // namespace tandem::cli
