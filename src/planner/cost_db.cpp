#include "planner/cost_db.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/sourced_json.h"

namespace tandem::planner {

using nlohmann::json;

void CostDb::add(std::string unit, int64_t out, int64_t in, int64_t n, double seconds, int64_t of) {
  points.push_back(CostPoint{std::move(unit), out, in, n, seconds, of > 0 ? of : out});
}

std::string CostDb::to_json() const {
  json pts = json::array();
  for (const CostPoint& p : points) pts.push_back({{"unit", p.unit}, {"out", p.out}, {"of", p.of}, {"in", p.in}, {"n", p.n}, {"seconds", p.seconds}});
  json j = {{"format", "tandem-costdb-1"},
            {"source", source},
            {"weight_type", weight_type},
            {"standard_lengths", standard_lengths},
            {"sync_fast_s", sync_fast_s},
            {"sync_blocking_s", sync_blocking_s},
            {"copy_bytes_per_s", copy_bytes_per_s},
            {"prepare_fixed_s", prepare_fixed_s},
            {"prepare_per_byte_s", prepare_per_byte_s},
            {"profile_seconds", profile_seconds},
            {"points", pts}};
  return j.dump(1);
}

namespace {

Status need(bool ok, const std::string& file, const std::string& field, const json& v, const char* what) {
  if (ok) return Status::Ok();
  std::string shown = v.dump();
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  return InvalidArgument(file + ": field '" + field + "' must be " + what + ", got " + shown);
}

Result<CostDb> parse_cost_db(const json& j, const std::string& file) {
  if (!j.is_object()) return InvalidArgument(file + ": top level must be a JSON object");
  auto get = [&](const char* k) -> const json& {
    static const json null_value;
    return j.contains(k) ? j[k] : null_value;
  };
  TANDEM_RETURN_IF_ERROR(need(get("format") == "tandem-costdb-1", file, "format", get("format"), "\"tandem-costdb-1\""));
  CostDb db;
  TANDEM_RETURN_IF_ERROR(need(get("source").is_string(), file, "source", get("source"), "a string"));
  db.source = get("source").get<std::string>();
  TANDEM_RETURN_IF_ERROR(need(get("weight_type").is_string(), file, "weight_type", get("weight_type"), "a string"));
  db.weight_type = get("weight_type").get<std::string>();
  const json& lengths = get("standard_lengths");
  TANDEM_RETURN_IF_ERROR(need(lengths.is_array() && !lengths.empty(), file, "standard_lengths", lengths, "a non-empty array"));
  for (size_t i = 0; i < lengths.size(); ++i) {
    const json& v = lengths[i];
    TANDEM_RETURN_IF_ERROR(need(v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= 65536, file,
                                "standard_lengths[" + std::to_string(i) + "]", v, "an integer in 1..65536"));
    db.standard_lengths.push_back(v.get<int>());
  }
  for (auto [key, dst, allow_zero] : {std::tuple{"sync_fast_s", &db.sync_fast_s, true}, {"sync_blocking_s", &db.sync_blocking_s, true},
                                      {"copy_bytes_per_s", &db.copy_bytes_per_s, false}, {"prepare_fixed_s", &db.prepare_fixed_s, true},
                                      {"prepare_per_byte_s", &db.prepare_per_byte_s, true}, {"profile_seconds", &db.profile_seconds, true}}) {
    const json& v = get(key);
    const bool ok = v.is_number() && std::isfinite(v.get<double>()) && (allow_zero ? v.get<double>() >= 0 : v.get<double>() > 0);
    TANDEM_RETURN_IF_ERROR(need(ok, file, key, v, allow_zero ? "a non-negative number" : "a positive number"));
    *dst = v.get<double>();
  }
  const json& pts = get("points");
  TANDEM_RETURN_IF_ERROR(need(pts.is_array(), file, "points", pts, "an array"));
  for (size_t i = 0; i < pts.size(); ++i) {
    const json& p = pts[i];
    const std::string where = "points[" + std::to_string(i) + "]";
    TANDEM_RETURN_IF_ERROR(need(p.is_object() && p.size() == 6, file, where, p, "{unit, out, of, in, n, seconds}"));
    const json& unit = p.contains("unit") ? p["unit"] : json();
    TANDEM_RETURN_IF_ERROR(need(unit == "gpu" || unit == "npu" || unit == "cpu", file, where + ".unit", unit, "\"gpu\", \"npu\" or \"cpu\""));
    CostPoint c;
    c.unit = unit.get<std::string>();
    for (auto [key, dst] : {std::pair{"out", &c.out}, {"of", &c.of}, {"in", &c.in}, {"n", &c.n}}) {
      const json& v = p.contains(key) ? p[key] : json();
      TANDEM_RETURN_IF_ERROR(need(v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= (int64_t(1) << 24), file,
                                  where + "." + key, v, "an integer in 1..16777216"));
      *dst = v.get<int64_t>();
    }
    const json& s = p.contains("seconds") ? p["seconds"] : json();
    TANDEM_RETURN_IF_ERROR(need(s.is_number() && std::isfinite(s.get<double>()) && s.get<double>() > 0, file, where + ".seconds", s,
                                "a positive number"));
    c.seconds = s.get<double>();
    TANDEM_RETURN_IF_ERROR(need(c.of >= c.out, file, where + ".of", p["of"], "at least out (the parent weight's rows)"));
    db.points.push_back(c);
  }
  return db;
}

}  // namespace

Result<CostDb> CostDb::from_json_text(std::string_view text, const std::string& file) {
  TANDEM_ASSIGN_OR_RETURN(json j, parse_json_text(text, file));
  try {
    return parse_cost_db(j, file);
  } catch (const std::exception& e) {
    return InvalidArgument(file + ": " + e.what());
  }
}

Result<CostDb> CostDb::load(const std::string& path) {
  TANDEM_ASSIGN_OR_RETURN(std::string text, read_text_file(path, "cost database"));
  return from_json_text(text, path);
}

}  // namespace tandem::planner
