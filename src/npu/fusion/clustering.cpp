#include "npu/fusion/clustering.h"

#include <algorithm>
#include <limits>

namespace tandem::npu::fusion {

namespace {
bool within(const ClusterCost& c, double cap) { return c.feasible && (cap <= 0 || c.power_w <= cap); }
}  // namespace

std::string Clustering::describe(const FusionGraph& g) const {
  std::string s;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : g.ops.size();
    s += k ? " [" : "[";
    for (size_t i = starts[k]; i < end; ++i) s += (i > starts[k] ? " " : "") + g.ops[i].name;
    s += "]";
  }
  return s;
}

Clustering evaluate(const FusionGraph& g, std::vector<size_t> starts, std::string strategy, const TargetModel& t,
                   const ClusterOptions& o) {
  Clustering p;
  p.strategy = std::move(strategy);
  p.starts = std::move(starts);
  for (size_t k = 0; k < p.starts.size(); ++k) {
    const size_t last = (k + 1 < p.starts.size() ? p.starts[k + 1] : g.ops.size()) - 1;
    ClusterCost c = cluster_cost(g, p.starts[k], last, t, o);
    p.seconds += c.seconds;
    p.external_bytes += c.external_bytes;
    p.energy_j += c.energy_j;
    p.peak_power_w = std::max(p.peak_power_w, c.power_w);
    p.feasible = p.feasible && c.feasible;
    p.clusters.push_back(c);
  }
  return p;
}

Clustering operator_library(const FusionGraph& g, const TargetModel& t, const ClusterOptions& o) {
  std::vector<size_t> starts(g.ops.size());
  for (size_t i = 0; i < starts.size(); ++i) starts[i] = i;
  ClusterOptions lib = o;
  lib.allow_spill = true;  // a library kernel streams what it cannot hold
  return evaluate(g, starts, "operator library", t, lib);
}

Clustering local_fusion(const FusionGraph& g, const TargetModel& t, const ClusterOptions& o) {
  // A vector op joins the cluster before it when it consumes that cluster's last op (epilogue);
  // a leading vector op with no producer joins the op after it (prologue).
  std::vector<size_t> starts;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const FusionOp& op = g.ops[i];
    const bool epilogue = op.kind == "vector" && i > 0 &&
                          std::find(op.inputs.begin(), op.inputs.end(), int(i) - 1) != op.inputs.end() &&
                          g.ops[i - 1].kind != "vector";
    const bool after_prologue = i > 0 && g.ops[i - 1].kind == "vector" && g.ops[i - 1].inputs.empty() && i == 1;
    if (!epilogue && !after_prologue) starts.push_back(i);
  }
  ClusterOptions lf = o;
  lf.allow_spill = true;
  return evaluate(g, starts, "local fusion", t, lf);
}

Clustering mega_fusion(const FusionGraph& g, const TargetModel& t, const ClusterOptions& o) {
  ClusterOptions mf = o;
  mf.allow_spill = true;
  return evaluate(g, {0}, "mega fusion", t, mf);
}

Clustering naive_partition(const FusionGraph& g, const TargetModel& t, const ClusteringOptions& o) {
  std::vector<size_t> starts = {0};
  for (size_t i = 1; i < g.ops.size(); ++i)
    if (!within(cluster_cost(g, starts.back(), i, t, o.cluster), o.power_cap_w)) starts.push_back(i);
  ClusterOptions spill = o.cluster;
  spill.allow_spill = true;  // a single op that alone exceeds TCM streams like a library kernel
  return evaluate(g, starts, "naive", t, spill);
}

Clustering search_partition(const FusionGraph& g, const TargetModel& t, const ClusteringOptions& o) {
  const size_t n = g.ops.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n + 1, inf);  // best[j]: least time for ops [0, j)
  std::vector<size_t> from(n + 1, 0);
  best[0] = 0;
  ClusterOptions spill = o.cluster;
  spill.allow_spill = true;
  for (size_t j = 1; j <= n; ++j)
    for (size_t i = 0; i < j; ++i) {
      if (best[i] == inf) continue;
      // A single op is always allowed (spilling like a library kernel if it must).
      const ClusterCost c = j - i == 1 ? cluster_cost(g, i, i, t, spill) : cluster_cost(g, i, j - 1, t, o.cluster);
      if (j - i > 1 && !within(c, o.power_cap_w)) continue;
      if (best[i] + c.seconds < best[j]) {
        best[j] = best[i] + c.seconds;
        from[j] = i;
      }
    }
  std::vector<size_t> starts;
  for (size_t j = n; j > 0; j = from[j]) starts.push_back(from[j]);
  std::reverse(starts.begin(), starts.end());
  return evaluate(g, starts, "search", t, spill);
}

}  // namespace tandem::npu::fusion
