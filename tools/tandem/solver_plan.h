// The solver by default (HeteroInfer: the solver chooses each matmul's partition): with an npu
// among several devices and no --strategy or --plan, run and bench profile the device set over
// the model's splittable matmuls once -- cached in the user's cache folder per device set + model
// shapes, reused by every later run -- and solve a plan from it when the run starts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "runtime/hetero_forward.h"

namespace tandem::cli {

struct SolverPlanOptions {
  int threads = 1;
  std::vector<int> standard_lengths;
  int64_t max_len = 512;  // the plan covers 1..max(max_len, the largest standard length): the longest chunk
  SyncMode sync = SyncMode::kFast;
  std::string cache_dir;  // device profiles are kept in cache_dir/profiles
  int reps = 3;           // timed runs per profile point (the fastest counts)
  // The run's compile cache: the profiled npu runs its programs (as the run's will), and the
  // profile is cached per cache and power level.
  std::shared_ptr<const compile_cache::CompileCache> npu_cache;
};

// The chooser HeteroForward calls once its devices are open: the cached profile of exactly those
// devices (profiled now on a fresh instance of each when there is none), the plan solved from it,
// and a summary naming the profile file and every matmul's choice with its reason.
std::function<Result<HeteroOptions::PlanChoice>(const std::map<std::string, devices::Device*>&, const DeviceRoles&)> solver_plan_chooser(
    std::shared_ptr<const Model> model, SolverPlanOptions options);

}  // namespace tandem::cli
