#include "planner/plan.h"

#include <cmath>
#include <functional>
#include <optional>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/sourced_json.h"

namespace tandem::planner {

using nlohmann::json;

namespace {

// One row per range of `plan` that `lengths_of` gives a lengths cell (nullopt: the row is left
// out), under a header naming that column; every other column as Plan::table prints it.
std::string range_table(const Plan& plan, const char* lengths_header, int lengths_width, const char* why_header,
                        const std::function<std::optional<std::string>(const PlanRange&)>& lengths_of) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "| %-24s | %-12s | %-*s | %-18s | %9s | %s\n", "op", "weight", lengths_width, lengths_header,
                "strategy", "gpu share", why_header);
  out += line;
  std::snprintf(line, sizeof line, "| %-24s | %-12s | %s | %-18s | %9s | %s\n", "------------------------", "------------",
                std::string(size_t(lengths_width), '-').c_str(), "------------------", "--------:", "---");
  out += line;
  for (const PlanOp& op : plan.ops) {
    for (const PlanRange& r : op.ranges) {
      const std::optional<std::string> lengths = lengths_of(r);
      if (!lengths) continue;
      const std::string shape = std::to_string(op.out) + "x" + std::to_string(op.in);
      std::snprintf(line, sizeof line, "| %-24s | %-12s | %-*s | %-18s | %9.2f | %s\n", op.name.c_str(), shape.c_str(),
                    lengths_width, lengths->c_str(), strategy_name(r.strategy), r.gpu_share, r.why.c_str());
      out += line;
    }
  }
  return out;
}

}  // namespace

std::string Plan::table() const {
  return range_table(*this, "lengths", 11, "why (predicted at the range's first length)",
                     [](const PlanRange& r) -> std::optional<std::string> {
                       return r.n_min == r.n_max ? std::to_string(r.n_min)
                                                 : std::to_string(r.n_min) + "-" + std::to_string(r.n_max);
                     });
}

namespace {

// What the partitioner takes from a plan's entry.
OpChoice choice_of(const PlanRange& r) { return OpChoice{r.strategy, r.gpu_share, r.npu_chunk, r.npu_chunks}; }

}  // namespace

Decider decider_from_plan(std::shared_ptr<const Plan> plan) {
  return [plan](int64_t out, int64_t in, int64_t n) -> std::optional<OpChoice> {
    const PlanRange* r = plan->find(out, in, n);
    if (!r) return std::nullopt;
    return choice_of(*r);
  };
}

Decider PlanUse::decider() {
  return [self = shared_from_this()](int64_t out, int64_t in, int64_t n) -> std::optional<OpChoice> {
    const PlanRange* r = self->plan_->find(out, in, n);
    if (!r) return std::nullopt;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->used_[r].insert(n);
    }
    return choice_of(*r);
  };
}

std::string PlanUse::table() const {
  std::lock_guard<std::mutex> lock(mu_);
  return range_table(*plan_, "lengths run", 16, "why (predicted at the plan range's first length)",
                     [this](const PlanRange& r) -> std::optional<std::string> {
                       auto it = used_.find(&r);
                       if (it == used_.end()) return std::nullopt;
                       std::string lengths;
                       for (int64_t n : it->second) {
                         if (lengths.size() > 12) {
                           lengths += ",...";
                           break;
                         }
                         lengths += (lengths.empty() ? "" : ",") + std::to_string(n);
                       }
                       return lengths;
                     });
}

Result<Plan> build_plan(const PerfModels& perf, const CostDb& db, const std::vector<MatmulShape>& shapes, int64_t max_len,
                        SyncMode sync) {
  if (max_len < 1 || max_len > 65536) return InvalidArgument("plan: max length " + std::to_string(max_len) + " must be in 1..65536");
  Plan p;
  p.source = db.source;
  p.sync = sync_mode_name(sync);
  p.standard_lengths = db.standard_lengths;
  for (const MatmulShape& s : shapes) {
    PlanOp op{s.name, s.out, s.in, {}};
    for (int64_t n = 1; n <= max_len; ++n) {
      TANDEM_ASSIGN_OR_RETURN(Decision d, decide(perf, db, s.out, s.in, n, sync));
      PlanRange* last = op.ranges.empty() ? nullptr : &op.ranges.back();
      // Only weight-centric and hybrid split by gpu_share; for the others it is a by-product of
      // the length (activation-centric's remainder), so equal strategies make one range.
      // Multi-tensor's share is a by-product too, but its chunk length and count are the choice.
      const bool share_matters = d.best.strategy == Strategy::kWeightCentric || d.best.strategy == Strategy::kHybrid;
      if (last && last->strategy == d.best.strategy && (!share_matters || last->gpu_share == d.best.gpu_share) &&
          last->npu_chunk == d.best.npu_chunk && last->npu_chunks == d.best.npu_chunks) {
        last->n_max = n;
        continue;
      }
      op.ranges.push_back(
          PlanRange{n, n, d.best.strategy, d.best.gpu_share, d.best.npu_chunk, d.best.npu_chunks, d.best.seconds, d.explain()});
    }
    p.ops.push_back(std::move(op));
  }
  return p;
}

}  // namespace tandem::planner
