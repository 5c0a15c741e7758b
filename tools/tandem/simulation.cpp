#include "tools/tandem/simulation.h"

#include <algorithm>
#include <memory>

#include "planner/perf_model.h"
#include "planner/plan.h"
#include "planner/profiler.h"
#include "runtime/device_roles.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

Result<Simulation> simulate_request(const Model& model, const SimulationRequest& q) {
  TANDEM_ASSIGN_OR_RETURN(sim::SocModel soc, sim::SocModel::load_named(q.soc));
  Simulation out;
  out.soc = soc.name;
  sim::SimulateOptions so;
  // The solver by default: the SoC model is profiled over the model's splittable matmuls and
  // every matmul takes the plan's choice for its length (what `profile` + `plan` + `--plan` do).
  const bool solve_now = q.strategy == "plan" && q.plan.empty();
  TANDEM_ASSIGN_OR_RETURN(so.partition, partition_options(q.strategy == "plan" ? "hybrid" : q.strategy, q.ratio, q.standard_lengths));
  // The SoC's units take the roles (a SoC without an npu runs every matmul on its GPU's role).
  TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, soc.roles());
  roles.apply_to(so.partition);
  TANDEM_ASSIGN_OR_RETURN(so.sync, sync_mode_from_name(q.sync));
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
