// Plan files: the JSON a plan is written as (`tandem plan -o`) and read back from (--plan). Apart
// from the solver so the reader (and its fuzz target) need nothing but the runtime's strategy names.
#include <nlohmann/json.hpp>

#include "core/sourced_json.h"
#include "planner/plan.h"

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
      json jr = {{"n_min", r.n_min},         {"n_max", r.n_max},     {"strategy", strategy_name(r.strategy)},
                 {"gpu_share", r.gpu_share}, {"seconds", r.seconds}, {"why", r.why}};
      if (r.strategy == Strategy::kMultiTensor) {
        jr["npu_chunk"] = r.npu_chunk;
        jr["npu_chunks"] = r.npu_chunks;
      }
      ranges.push_back(std::move(jr));
    }
    jops.push_back({{"name", op.name}, {"out", op.out}, {"in", op.in}, {"ranges", ranges}});
  }
  json j = {{"format", "tandem-plan-1"},
            {"source", source},
            {"sync", sync},
            {"standard_lengths", standard_lengths},
            {"ops", jops}};
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

bool positive_int(const json& v) {
  return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= (int64_t(1) << 24);
}

Result<Plan> parse_plan(const json& j, const std::string& file) {
  if (at(j, "format") != "tandem-plan-1") return bad(file, "format", at(j, "format"), "\"tandem-plan-1\"");
  Plan p;
  if (!at(j, "source").is_string()) return bad(file, "source", at(j, "source"), "a string");
  p.source = at(j, "source").get<std::string>();
  if (at(j, "sync") != "fast" && at(j, "sync") != "blocking")
    return bad(file, "sync", at(j, "sync"), "\"fast\" or \"blocking\"");
  p.sync = at(j, "sync").get<std::string>();
  const json& lengths = at(j, "standard_lengths");
  if (!lengths.is_array()) return bad(file, "standard_lengths", lengths, "an array");
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (!positive_int(lengths[i]))
      return bad(file, "standard_lengths[" + std::to_string(i) + "]", lengths[i], "a positive integer");
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
        if (!positive_int(at(r, "npu_chunk")))
          return bad(file, rw + ".npu_chunk", at(r, "npu_chunk"), "a positive integer");
        if (!positive_int(at(r, "npu_chunks")))
          return bad(file, rw + ".npu_chunks", at(r, "npu_chunks"), "a positive integer");
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

}  // namespace tandem::planner
