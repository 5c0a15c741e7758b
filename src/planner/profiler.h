// The offline profiler (SEEDS A.4) over the constrained space: the model's splittable weight
// shapes x the standard lengths (and 1, decode) x the partition ratios, with sub-tensors no smaller
// than the NPU's minimum (one tile of rows), plus the sync and copy costs. Here it runs against a
// modeled SoC (the devices' own models, as the SimDriver times them).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compile_cache/cache.h"
#include "model/model.h"
#include "planner/cost_db.h"
#include "sim/soc_model.h"

namespace tandem::planner {

struct MatmulShape {
  std::string name;  // "attn_q", "ffn_down", ...
  int64_t out = 0, in = 0;
};
// The splittable matmuls of one decoder layer, one entry per distinct shape (names joined).
std::vector<MatmulShape> splittable_shapes(const Model& model);

struct ProfileSpace {
  std::vector<MatmulShape> shapes;
  std::vector<int> standard_lengths = {32, 64, 128, 256, 512, 1024};
  std::vector<double> ratios = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};  // GPU share of weight rows
  DType weight_type = DType::Q4_0;
  // Given, the NPU's shapes the cache holds are timed on the compiler's programs (sim/task_cost.h).
  std::shared_ptr<const compile_cache::CompileCache> npu_cache;
};

// One sub-shape to time: the first `rows` rows of a weight [parent_rows x in]. A part keeps its
// parent (a unit's rate can depend on the whole weight's shape, SEEDS NPU-3).
struct ProfileJob {
  int64_t rows = 0, in = 0, parent_rows = 0;
};
// The units' sub-shapes: every whole weight and, per ratio, the NPU's rows (whole tiles, at least
// one tile) and the GPU's complement.
std::vector<ProfileJob> profile_jobs(const ProfileSpace& space, int64_t tile);

// Every (unit, rows, in, n) the solver can ask for, with the NPU's sub-tensors rounded to whole
// tiles and never below one tile. progress(f) reports the fraction done.
Result<CostDb> profile_soc(const sim::SocModel& soc, const ProfileSpace& space,
                           const std::function<void(double)>& progress = {});

}  // namespace tandem::planner
