#include "planner/plan.h"

#include <cmath>
#include <functional>
#include <optional>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/sourced_json.h"

namespace tandem::planner {

using nlohmann::json;

const PlanRange* Plan::find(int64_t out, int64_t in, int64_t n) const {
  for (const PlanOp& op : ops) {
    if (op.out != out || op.in != in) continue;
    for (const PlanRange& r : op.ranges)
      if (n >= r.n_min && n <= r.n_max) return &r;
  }
  return nullptr;
}

std::string Plan::to_json() const {
  json jops = json::array();
  for (const PlanOp& op : ops) {
    json ranges = json::array();
    for (const PlanRange& r : op.ranges) {
      json jr = {{"n_min", r.n_min}, {"n_max", r.n_max}, {"strategy", strategy_name(r.strategy)},
                 {"gpu_share", r.gpu_share}, {"seconds", r.seconds}, {"why", r.why}};
      if (r.strategy == Strategy::kMultiTensor) {
        jr["npu_chunk"] = r.npu_chunk;
        jr["npu_chunks"] = r.npu_chunks;
      }
      ranges.push_back(std::move(jr));
    }
    jops.push_back({{"name", op.name}, {"out", op.out}, {"in", op.in}, {"ranges", ranges}});
  }
  json j = {{"format", "tandem-plan-1"}, {"source", source}, {"sync", sync}, {"standard_lengths", standard_lengths}, {"ops", jops}};
  return j.dump(1);
}

namespace {

Status bad(const std::string& file, const std::string& field, const json& v, const char* what) {
  std::string shown = v.dump();
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  return InvalidArgument(file + ": field '" + field + "' must be " + what + ", got " + shown);
}

const json& at(const json& j, const char* key) {
  static const json null_value;
  return j.is_object() && j.contains(key) ? j[key] : null_value;
}

bool positive_int(const json& v) { return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= (int64_t(1) << 24); }

Result<Plan> parse_plan(const json& j, const std::string& file) {
  if (at(j, "format") != "tandem-plan-1") return bad(file, "format", at(j, "format"), "\"tandem-plan-1\"");
  Plan p;
  if (!at(j, "source").is_string()) return bad(file, "source", at(j, "source"), "a string");
  p.source = at(j, "source").get<std::string>();
  if (at(j, "sync") != "fast" && at(j, "sync") != "blocking") return bad(file, "sync", at(j, "sync"), "\"fast\" or \"blocking\"");
  p.sync = at(j, "sync").get<std::string>();
  const json& lengths = at(j, "standard_lengths");
  if (!lengths.is_array()) return bad(file, "standard_lengths", lengths, "an array");
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (!positive_int(lengths[i])) return bad(file, "standard_lengths[" + std::to_string(i) + "]", lengths[i], "a positive integer");
    p.standard_lengths.push_back(lengths[i].get<int>());
  }
  const json& ops = at(j, "ops");
  if (!ops.is_array()) return bad(file, "ops", ops, "an array");
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string where = "ops[" + std::to_string(i) + "]";
    const json& o = ops[i];
    PlanOp op;
    if (!at(o, "name").is_string()) return bad(file, where + ".name", at(o, "name"), "a string");
    op.name = at(o, "name").get<std::string>();
    if (!positive_int(at(o, "out"))) return bad(file, where + ".out", at(o, "out"), "a positive integer");
    if (!positive_int(at(o, "in"))) return bad(file, where + ".in", at(o, "in"), "a positive integer");
    op.out = at(o, "out").get<int64_t>();
    op.in = at(o, "in").get<int64_t>();
    const json& ranges = at(o, "ranges");
    if (!ranges.is_array() || ranges.empty()) return bad(file, where + ".ranges", ranges, "a non-empty array");
    int64_t next = 1;
    for (size_t k = 0; k < ranges.size(); ++k) {
      const std::string rw = where + ".ranges[" + std::to_string(k) + "]";
      const json& r = ranges[k];
      PlanRange pr;
      if (!positive_int(at(r, "n_min")) || at(r, "n_min").get<int64_t>() != next) {
        return bad(file, rw + ".n_min", at(r, "n_min"), ("the next length, " + std::to_string(next)).c_str());
      }
      pr.n_min = next;
      if (!positive_int(at(r, "n_max")) || at(r, "n_max").get<int64_t>() < pr.n_min) {
        return bad(file, rw + ".n_max", at(r, "n_max"), "an integer >= n_min");
      }
      pr.n_max = at(r, "n_max").get<int64_t>();
      if (!at(r, "strategy").is_string()) return bad(file, rw + ".strategy", at(r, "strategy"), "a strategy name");
      auto s = strategy_from_name(at(r, "strategy").get<std::string>());
      if (!s.ok()) return InvalidArgument(file + ": field '" + rw + ".strategy': " + s.status().message());
      pr.strategy = *s;
      const json& share = at(r, "gpu_share");
      if (!share.is_number() || !(share.get<double>() >= 0 && share.get<double>() <= 1)) {
        return bad(file, rw + ".gpu_share", share, "a number in [0, 1]");
      }
      pr.gpu_share = share.get<double>();
      const json& sec = at(r, "seconds");
      if (!sec.is_number() || !std::isfinite(sec.get<double>()) || sec.get<double>() < 0) {
        return bad(file, rw + ".seconds", sec, "a non-negative number");
      }
      pr.seconds = sec.get<double>();
      if (!at(r, "why").is_string()) return bad(file, rw + ".why", at(r, "why"), "a string");
      pr.why = at(r, "why").get<std::string>();
      // multi-tensor's chunk length and count: optional (absent: the runtime's default), both or none.
      if (pr.strategy == Strategy::kMultiTensor && (r.contains("npu_chunk") || r.contains("npu_chunks"))) {
        if (!positive_int(at(r, "npu_chunk"))) return bad(file, rw + ".npu_chunk", at(r, "npu_chunk"), "a positive integer");
        if (!positive_int(at(r, "npu_chunks"))) return bad(file, rw + ".npu_chunks", at(r, "npu_chunks"), "a positive integer");
        pr.npu_chunk = at(r, "npu_chunk").get<int64_t>();
        pr.npu_chunks = at(r, "npu_chunks").get<int64_t>();
        if (pr.npu_chunk * pr.npu_chunks > pr.n_min) {
          return bad(file, rw + ".npu_chunks", at(r, "npu_chunks"),
                     ("chunks that fit the range's shortest length, " + std::to_string(pr.n_min) + " rows").c_str());
        }
      }
      next = pr.n_max + 1;
      op.ranges.push_back(std::move(pr));
    }
    p.ops.push_back(std::move(op));
  }
  return p;
}

}  // namespace

Result<Plan> Plan::from_json_text(std::string_view text, const std::string& file) {
  TANDEM_ASSIGN_OR_RETURN(json j, parse_json_text(text, file));
  try {
    return parse_plan(j, file);
  } catch (const std::exception& e) {
    return InvalidArgument(file + ": " + e.what());
  }
}

Result<Plan> Plan::load(const std::string& path) {
  TANDEM_ASSIGN_OR_RETURN(std::string text, read_text_file(path, "plan"));
  return from_json_text(text, path);
}

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
