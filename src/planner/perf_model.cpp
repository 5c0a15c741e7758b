#include "planner/perf_model.h"

#include <algorithm>

namespace tandem::planner {

PerfModels::PerfModels(const CostDb& db) {
  // The solver plans the two roles; a fallback's points (unit "cpu") are in the DB for reading.
  for (const CostPoint& p : db.points) {
    if (p.unit == "gpu" || p.unit == "npu") (p.unit == "gpu" ? gpu_ : npu_)[key(p.out, p.in, p.of)].emplace_back(p.n, p.seconds);
  }
  for (auto* m : {&gpu_, &npu_})
    for (auto& [shape, curve] : *m) {
      std::sort(curve.begin(), curve.end());
      // A repeated length keeps its last measurement.
      curve.erase(std::unique(curve.begin(), curve.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                  curve.end());
    }
}

std::optional<double> PerfModels::interpolate(const Curve& c, int64_t n) {
  if (c.empty()) return std::nullopt;
  if (c.size() == 1) return c[0].second * double(n) / double(c[0].first);
  // The segment around n, or the nearest one at either end (linear extrapolation).
  size_t hi = 1;
  while (hi + 1 < c.size() && c[hi].first < n) ++hi;
  const auto& [n0, t0] = c[hi - 1];
  const auto& [n1, t1] = c[hi];
  const double t = t0 + (t1 - t0) * double(n - n0) / double(n1 - n0);
  return std::max(t, std::min(t0, t1) * 0.5);  // never extrapolate below half the fastest neighbour
}

std::optional<double> PerfModels::gpu(int64_t out, int64_t in, int64_t n, int64_t of) const {
  auto it = gpu_.find(key(out, in, of));
  if (it == gpu_.end()) return std::nullopt;
  return interpolate(it->second, n);
}

std::optional<int64_t> PerfModels::npu_graph_length(int64_t out, int64_t in, int64_t n, int64_t of) const {
  auto it = npu_.find(key(out, in, of));
  if (it == npu_.end()) return std::nullopt;
  for (const auto& [len, t] : it->second)
    if (len >= n) return len;
  return std::nullopt;
}

std::optional<double> PerfModels::npu(int64_t out, int64_t in, int64_t n, int64_t of) const {
  const std::optional<int64_t> graph = npu_graph_length(out, in, n, of);
  if (!graph) return std::nullopt;
  for (const auto& [len, t] : npu_.at(key(out, in, of)))
    if (len == *graph) return t;
  return std::nullopt;
}

std::optional<double> PerfModels::npu_exact(int64_t out, int64_t in, int64_t n, int64_t of) const {
  auto it = npu_.find(key(out, in, of));
  if (it == npu_.end()) return std::nullopt;
  return interpolate(it->second, n);
}

std::vector<int64_t> PerfModels::split_rows(int64_t out, int64_t in) const {
  std::vector<int64_t> rows;
  for (const auto& [shape, curve] : npu_) {
    const auto [of, o, i] = shape;
    if (of == out && i == in && o < out && gpu_.count(key(out - o, in, out))) rows.push_back(o);
  }
  return rows;
}

}  // namespace tandem::planner
