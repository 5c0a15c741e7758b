// A Plan: per splittable matmul shape and range of sequence lengths, the strategy (and GPU share)
// the solver chose, with the reason. Written by `tandem plan -o plan.json`, read by `--plan` (the
// decider picks the entry for the actual length).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "planner/profiler.h"
#include "planner/solver.h"

namespace tandem::planner {

struct PlanRange {
  int64_t n_min = 1, n_max = 1;  // inclusive
  Strategy strategy = Strategy::kGpuOnly;
  double gpu_share = 1.0;
  int64_t npu_chunk = 0, npu_chunks = 0;  // multi-tensor: the NPU's chunk length and count (OpChoice)
  double seconds = 0;  // predicted at n_min
  std::string why;     // the decision at n_min explained
};

struct PlanOp {
  std::string name;  // "attn_q,attn_output"
  int64_t out = 0, in = 0;
  std::vector<PlanRange> ranges;  // contiguous from 1, ascending
};

struct Plan {
  std::string source;  // the cost DB's source
  std::string sync;    // "fast" | "blocking"
  std::vector<int> standard_lengths;
  std::vector<PlanOp> ops;

  // The entry for weight [out x in] at length n (nullptr: no entry covers it).
  const PlanRange* find(int64_t out, int64_t in, int64_t n) const;
  std::string to_json() const;
  static Result<Plan> from_json_text(std::string_view text, const std::string& file);
  static Result<Plan> load(const std::string& path);
  std::string table() const;  // one row per range, for people
};

// The decider a Partitioner consults: the plan's entry for the op's shape and length (nullopt
// where the plan has none, so the run's --strategy applies).
Decider decider_from_plan(std::shared_ptr<const Plan> plan);

// The entries of a plan a run took, for `-v`: its decider records which range of which op served
// which lengths, and table() shows only those (a plan has a range per length band; a run uses a few).
class PlanUse : public std::enable_shared_from_this<PlanUse> {
 public:
  explicit PlanUse(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  // decider_from_plan's, also recording each entry it returns (safe from any thread). The
  // decider keeps this alive: make a PlanUse with std::make_shared.
  Decider decider();
  // One row per entry used: op, weight, the lengths it served, strategy, GPU share, why.
  std::string table() const;

 private:
  std::shared_ptr<const Plan> plan_;
  mutable std::mutex mu_;
  std::map<const PlanRange*, std::set<int64_t>> used_;  // entry -> lengths it served
};

// Decides every length 1..max_len for every shape and merges equal neighbours into ranges.
Result<Plan> build_plan(const PerfModels& perf, const CostDb& db, const std::vector<MatmulShape>& shapes, int64_t max_len,
                        SyncMode sync);

}  // namespace tandem::planner
