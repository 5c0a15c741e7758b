// Perf models over a cost DB (SEEDS A.5): the GPU's time grows linearly with the sequence length
// (GPU-1), so it is interpolated between profiled lengths; the NPU runs static graphs padded to a
// multiple of its tile and to a prepared length (NPU-1), so its time is a step function: the time
// of the smallest profiled length that holds the request.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "planner/cost_db.h"

namespace tandem::planner {

class PerfModels {
 public:
  explicit PerfModels(const CostDb& db);

  // nullopt: the shape [out x in] was not profiled on the GPU.
  std::optional<double> gpu(int64_t out, int64_t in, int64_t n) const;
  // nullopt: not profiled, or n is longer than every profiled length (no graph holds it).
  std::optional<double> npu(int64_t out, int64_t in, int64_t n) const;
  // The graph length the NPU runs n rows in (the step), if any.
  std::optional<int64_t> npu_graph_length(int64_t out, int64_t in, int64_t n) const;
  // The NPU at an exact length n (online-prepare builds that graph): interpolated between the
  // profiled lengths around it, since an exact graph does the work of its own size.
  std::optional<double> npu_exact(int64_t out, int64_t in, int64_t n) const;
  // Weight-row counts profiled on both units for this `in` and below `out` (weight-centric splits).
  std::vector<int64_t> split_rows(int64_t out, int64_t in) const;

 private:
  using Curve = std::vector<std::pair<int64_t, double>>;  // (n, seconds), sorted by n
  static std::optional<double> interpolate(const Curve& c, int64_t n);
  std::map<std::pair<int64_t, int64_t>, Curve> gpu_, npu_;
};

}  // namespace tandem::planner
