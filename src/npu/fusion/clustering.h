// Fusion strategies: ways to cut a FusionGraph into clusters, and their totals on cluster_cost.
//   operator library  every op its own graph (intermediates through DDR)
//   local fusion      elementwise ops fused into the neighbouring matrix op (prologue/epilogue)
//   mega fusion       the whole graph as one cluster (spills what TCM cannot hold)
//   naive             greedy reference: grow a cluster until the next op would break the TCM or
//                     the power budget, then cut
//   search            dynamic programming over every contiguous partition: least total time among
//                     partitions whose clusters fit TCM and the power budget (a single op always
//                     forms a cluster, whatever it draws)
#pragma once

#include <string>
#include <vector>

#include "npu/fusion/cluster_cost.h"

namespace tandem::npu::fusion {

struct ClusteringOptions {
  ClusterOptions cluster;
  double power_cap_w = 0;  // 0 = no power budget
};

struct Clustering {
  std::string strategy;
  std::vector<size_t> starts;        // first op of each cluster
  std::vector<ClusterCost> clusters;
  double seconds = 0;
  uint64_t external_bytes = 0;
  double peak_power_w = 0;
  double energy_j = 0;
  bool feasible = true;              // every cluster within TCM (or spilled, when allowed)
  std::string describe(const FusionGraph& g) const;  // "[attn_norm q k v] [rope_q ...] ..."
};

Clustering evaluate(const FusionGraph& g, std::vector<size_t> starts, std::string strategy, const TargetModel& t,
                   const ClusterOptions& o);
Clustering operator_library(const FusionGraph& g, const TargetModel& t, const ClusterOptions& o);
Clustering local_fusion(const FusionGraph& g, const TargetModel& t, const ClusterOptions& o);
Clustering mega_fusion(const FusionGraph& g, const TargetModel& t, const ClusterOptions& o);
Clustering naive_partition(const FusionGraph& g, const TargetModel& t, const ClusteringOptions& o);
Clustering search_partition(const FusionGraph& g, const TargetModel& t, const ClusteringOptions& o);

}  // namespace tandem::npu::fusion
