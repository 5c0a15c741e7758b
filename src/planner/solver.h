// The solver (SEEDS A.5): for one splittable matmul (weight [out x in]) at one sequence length n,
// every feasible strategy is scored from the perf models with
//     min( max(T_gpu(p1), T_npu(p2)) + T_sync + T_copy,  T_gpu(all),  T_npu(all) + T_sync + T_copy )
// extended to each partition of the heterogeneous-execution issue, and the fastest wins. Every
// decision keeps the alternatives it beat, so it explains itself ("hybrid 1.2 ms < ...").
// T_copy is 0: devices share the pool and padding happens in place.
#pragma once

#include <string>
#include <vector>

#include "planner/cost_db.h"
#include "planner/perf_model.h"
#include "runtime/partition.h"
#include "runtime/sync/sync_mode.h"

namespace tandem::planner {

struct Alternative {
  Strategy strategy;
  double gpu_share = 1.0;  // weight rows on the GPU (weight-centric, hybrid); 1 gpu-only, 0 NPU-only
  double seconds = 0;
  int64_t npu_chunk = 0, npu_chunks = 0;  // multi-tensor: chunks of npu_chunk rows on the NPU (OpChoice)
  std::string detail;      // how the time arises: "npu 256 rows 1.88 ms | gpu 44 rows 1.90 ms + sync 0.01"
};

struct Decision {
  int64_t out = 0, in = 0, n = 0;
  Alternative best;
  std::vector<Alternative> alternatives;  // every feasible strategy, fastest first
  std::string explain() const;            // one line: the winner and the times it beat
};

// standard: the NPU's static lengths (the decode graph, 1, is always there). Errors if no
// strategy is feasible (the shape was not profiled).
Result<Decision> decide(const PerfModels& perf, const CostDb& db, int64_t out, int64_t in, int64_t n, SyncMode sync);

}  // namespace tandem::planner
