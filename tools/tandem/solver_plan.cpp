#include "tools/tandem/solver_plan.h"

#include <cstdio>

#include "devices/registry.h"
#include "planner/device_profiler.h"
#include "planner/perf_model.h"
#include "planner/plan.h"
#include "planner/profile_cache.h"
#include "tools/tandem/progress_bar.h"

namespace tandem::cli {

std::function<Result<HeteroOptions::PlanChoice>(const std::map<std::string, devices::Device*>&, const DeviceRoles&)> solver_plan_chooser(
    std::shared_ptr<const Model> model, SolverPlanOptions o) {
  auto solve = [model, o](const std::map<std::string, devices::Device*>& devices,
                          const DeviceRoles& roles) -> Result<HeteroOptions::PlanChoice> {
    planner::ProfileSpace space;
    space.shapes = planner::splittable_shapes(*model);
    space.standard_lengths = o.standard_lengths;
    if (!model->layers().empty()) space.weight_type = model->layers()[0].wq.type;
    space.npu_cache = o.npu_cache;
    std::vector<planner::ProfiledDevice> set;
    std::string names;
    for (const DeviceRoles::Member& m : roles.members) {
      const devices::Device& d = *devices.at(m.name);
      set.push_back({m.name, d.caps().kind, d.identity()});
      names += (names.empty() ? "" : ",") + m.name;
    }
    const planner::ProfileCacheKey key = planner::profile_cache_key(set, planner::cpu_model_name(), space, o.threads, o.reps);
    // Profiling runs on instances of its own, so the run's devices start clean (no graphs built,
    // nothing counted) whether the profile was cached or not.
    auto profile = [&]() -> Result<planner::CostDb> {
      std::fprintf(stderr, "tandem: profiling %s for the solver (once for these devices and shapes; cached in %s/profiles)\n",
                   names.c_str(), o.cache_dir.c_str());
      std::vector<std::unique_ptr<devices::Device>> opened;
      std::vector<devices::Device*> raw;
      for (const DeviceRoles::Member& m : roles.members) {
        TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<devices::Device> d, devices::open_device(m.name, model, o.threads));
        if (devices::CompiledPrograms* programs = o.npu_cache ? d->compiled_programs() : nullptr)
          TANDEM_RETURN_IF_ERROR(programs->use_compile_cache(o.npu_cache));
        raw.push_back(d.get());
        opened.push_back(std::move(d));
      }
      ProgressBar bar("      profile");
      TANDEM_ASSIGN_OR_RETURN(planner::DeviceProfile p,
                              planner::profile_devices(raw, *model, space, o.reps, [&](double f) { bar.update(f); }));
      return std::move(p.db);
    };
    TANDEM_ASSIGN_OR_RETURN(planner::CachedProfile cached, planner::cached_profile(o.cache_dir + "/profiles", key, profile));
    const planner::PerfModels perf(cached.db);
    int64_t max_len = o.max_len;
    for (int n : o.standard_lengths) max_len = std::max<int64_t>(max_len, n);
    Result<planner::Plan> solved = planner::build_plan(perf, cached.db, space.shapes, max_len, o.sync);
    if (!solved.ok()) return Status(solved.status().code(), cached.path + ": " + solved.status().message());
    planner::Plan plan = std::move(*solved);
    HeteroOptions::PlanChoice choice;
    char head[512];
    if (cached.from_cache) {
      std::snprintf(head, sizeof head, "the solver's, for %s from the device profile %s (cached, profiled in %.1f s)\n", names.c_str(),
                    cached.path.c_str(), cached.db.profile_seconds);
    } else {
      std::snprintf(head, sizeof head, "the solver's, for %s from the device profile %s (profiled now in %.1f s: %s)\n",
                    names.c_str(), cached.path.c_str(), cached.db.profile_seconds, cached.why.c_str());
    }
    choice.summary = head;
    auto use = std::make_shared<planner::PlanUse>(std::make_shared<const planner::Plan>(std::move(plan)));
    choice.decider = use->decider();
    choice.taken = [use] { return use->table(); };
    return choice;
  };
  // A profile that cannot be made (a device failing a probe kernel) or solved costs the run its
  // plan, not the run: the fixed strategy applies, and stderr and -v say why.
  return [solve](const std::map<std::string, devices::Device*>& devices,
                 const DeviceRoles& roles) -> Result<HeteroOptions::PlanChoice> {
    Result<HeteroOptions::PlanChoice> choice = solve(devices, roles);
    if (choice.ok()) return choice;
    std::fprintf(stderr, "tandem: warning: no solver plan (%s); the fixed strategy runs instead\n",
                 choice.status().message().c_str());
    HeteroOptions::PlanChoice fixed;
    fixed.summary = "none: the solver's plan is unavailable (" + choice.status().message() + "); the fixed strategy ran\n";
    return fixed;
  };
}

}  // namespace tandem::cli
