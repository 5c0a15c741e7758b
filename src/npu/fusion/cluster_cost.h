// The analytical cost of running a contiguous run of a FusionGraph as one NPU graph (a fusion
// cluster), on the shared cost model: compute on the arrays and the vector unit, DMA of the
// bytes that cross the cluster's boundary (weights always; activations only where they enter or
// leave it), their overlap, and the overheads no overlap hides (launch, events between ops).
#pragma once

#include <cstdint>
#include <vector>

#include "npu/fusion/fusion_graph.h"
#include "npu/target_model.h"

namespace tandem::npu::fusion {

struct ClusterOptions {
  uint64_t tcm_bytes = 0;      // capacity for resident buffers and kept intermediates
  bool double_buffer = true;   // DMA overlaps compute (false: every term is paid in sequence)
  bool allow_spill = false;    // over-TCM clusters spill their excess (mega fusion); else infeasible
};

struct ClusterCost {
  bool feasible = true;
  double seconds = 0;
  double matrix_s = 0, vector_s = 0, dma_s = 0, overhead_s = 0;
  uint64_t external_bytes = 0;  // DDR traffic: weights, cluster inputs and outputs, spills
  uint64_t tcm_peak = 0;        // most bytes resident at once
  double energy_j = 0;
  double power_w = 0;           // energy / seconds: the cluster's draw while it runs
};

// Ops [first, last] of g as one cluster.
ClusterCost cluster_cost(const FusionGraph& g, size_t first, size_t last, const TargetModel& t, const ClusterOptions& o);

}  // namespace tandem::npu::fusion
