// Perf models over a cost DB (SEEDS A.5): the GPU's time grows linearly with the sequence length
// (GPU-1), so it is interpolated between profiled lengths; the NPU runs static graphs padded to a
// multiple of its tile and to a prepared length (NPU-1), so its time is a step function: the time
// of the smallest profiled length that holds the request.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "planner/cost_db.h"

namespace tandem::planner {

class PerfModels {
 public:
  explicit PerfModels(const CostDb& db);

  // `out` rows of a weight [of x in] (of <= 0: the whole weight, of = out).
  // nullopt: that part was not profiled on the GPU.
  std::optional<double> gpu(int64_t out, int64_t in, int64_t n, int64_t of = 0) const;
  // nullopt: not profiled, or n is longer than every profiled length (no graph holds it).
  std::optional<double> npu(int64_t out, int64_t in, int64_t n, int64_t of = 0) const;
  // The graph length the NPU runs n rows in (the step), if any.
  std::optional<int64_t> npu_graph_length(int64_t out, int64_t in, int64_t n, int64_t of = 0) const;
  // The NPU at an exact length n (online-prepare builds that graph): interpolated between the
  // profiled lengths around it, since an exact graph does the work of its own size.
  std::optional<double> npu_exact(int64_t out, int64_t in, int64_t n, int64_t of = 0) const;
  // NPU row counts of weight [out x in] profiled on the NPU with their complement on the GPU
  // (weight-centric splits).
  std::vector<int64_t> split_rows(int64_t out, int64_t in) const;

 private:
  using Curve = std::vector<std::pair<int64_t, double>>;  // (n, seconds), sorted by n
  static std::optional<double> interpolate(const Curve& c, int64_t n);
  using Key = std::tuple<int64_t, int64_t, int64_t>;  // (of, out, in)
  static Key key(int64_t out, int64_t in, int64_t of) { return {of > 0 ? of : out, out, in}; }
  std::map<Key, Curve> gpu_, npu_;
};

}  // namespace tandem::planner
