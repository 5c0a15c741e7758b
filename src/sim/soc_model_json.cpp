// Reading a SoC description (data/soc/*.json): units, DRAM, sync and host numbers, each with its
// source. Apart from the rest of SocModel so the reader (and its fuzz target) stand alone.
#include <optional>

#include "core/sourced_json.h"
#include "sim/soc_model.h"

namespace tandem::sim {

using nlohmann::json;

namespace {

std::optional<devices::DeviceKind> kind_named(const std::string& name) {
  for (devices::DeviceKind k : {devices::DeviceKind::kCpu, devices::DeviceKind::kGpu, devices::DeviceKind::kNpu})
    if (name == devices::device_kind_name(k)) return k;
  return std::nullopt;
}

// Names the simulator gives its other queues and trace tracks.
bool reserved_unit_name(const std::string& n) { return n == "host" || n == "sync" || n == "phase"; }

bool valid_unit_name(const std::string& n) {
  if (n.empty() || n.size() > 32) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

Result<SocModel> parse(const json& root, const std::string& file, const std::string& npu_dir) {
  if (!root.is_object()) return InvalidArgument(file + ": top level must be a JSON object");
  if (!root.contains("units") && (root.contains("gpu") || root.contains("npu") || root.contains("npu_target"))) {
    return InvalidArgument(
        file +
        ": top-level 'gpu', 'npu' and 'npu_target' are the old layout: each unit is now a section of "
        "'units' with its kind (gpu_profile_scale -> units.gpu.profile_scale, npu_target -> units.npu.target; "
        "see data/soc/sd8gen3.json)");
  }
  SourcedJsonReader r(root, file);
  SocModel s;
  s.file = file;
  s.npu_dir = npu_dir;
  s.name = r.string("name");
  s.description = r.string("description");
  if (!root.contains("units") || !root["units"].is_object() || root["units"].empty()) {
    return InvalidArgument(file +
                           ": field 'units' must be an object with at least one unit ({\"<name>\": {\"kind\": "
                           "\"gpu\"|\"cpu\"|\"npu\", ...}}), got " +
                           (root.contains("units") ? root["units"].dump().substr(0, 80) : std::string("nothing")));
  }
  std::vector<std::string> npu_targets;  // per unit ("" for kernel units)
  for (auto it = root["units"].begin(); it != root["units"].end(); ++it) {
    const std::string& name = it.key();
    if (!valid_unit_name(name) || reserved_unit_name(name)) {
      return InvalidArgument(file + ": unit name 'units." + name +
                             "' must be 1-32 of [a-z0-9_-] and not host, sync or phase");
    }
    const std::string u = "units." + name + ".";
    ComputeUnit unit;
    unit.name = name;
    const std::string kind = r.string(u + "kind");
    if (!r.status().ok()) return r.status();
    const auto k = kind_named(kind);
    if (!k)
      return InvalidArgument(file + ": field '" + u + "kind' must be \"gpu\", \"cpu\" or \"npu\", got \"" + kind +
                             "\"");
    unit.kind = *k;
    if (unit.static_graphs()) {
      auto& n = unit.npu;
      npu_targets.push_back(r.string(u + "target"));
      n.dram_cap_bytes_per_s = r.number(u + "dram_cap_bytes_per_s");
      n.submit_s = r.number(u + "submit_s");
      n.blocking_wait_s = r.number(u + "blocking_wait_s");
      n.idle_w = r.number(u + "idle_w", false, true);
      n.calibration.stack_factor = r.number(u + "stack_factor");
      n.calibration.shape_exponent = r.number(u + "shape_exponent", false, true);
      n.calibration.source = r.source_of(u + "stack_factor");
      n.calibration.naive_order_factor = r.number(u + "naive_order_factor");
      n.order_exchange_speedup = r.number(u + "order_exchange_speedup");
    } else {
      auto& g = unit.kernels;
      npu_targets.emplace_back();
      g.peak_flops = r.number(u + "peak_flops");
      g.achieved_flops = r.number(u + "achieved_flops");
      g.kernel_fixed_s = r.number(u + "kernel_fixed_s", false, true);
      g.submit_s = r.number(u + "submit_s");
      g.finish_s = r.number(u + "finish_s");
      g.dram_cap_bytes_per_s = r.number(u + "dram_cap_bytes_per_s");
      g.active_w = r.number(u + "active_w");
      g.idle_w = r.number(u + "idle_w", false, true);
      g.profile_scale = r.number(u + "profile_scale");
    }
    s.units.push_back(std::move(unit));
  }
  s.dram.theoretical_bytes_per_s = r.number("dram.theoretical_bytes_per_s");
  s.dram.achievable_bytes_per_s = r.number("dram.achievable_bytes_per_s");
  s.dram.pj_per_byte = r.number("dram.pj_per_byte");
  s.sync.usleep_granularity_s = r.number("sync.usleep_granularity_s");
  s.sync.poll_s = r.number("sync.poll_s");
  s.sync.flag_write_s = r.number("sync.flag_write_s");
  s.host.memcpy_bytes_per_s = r.number("host.memcpy_bytes_per_s");
  s.host.active_w = r.number("host.active_w");
  s.host.idle_w = r.number("host.idle_w", false, true);
  s.profile_source = r.string("profile_points.source");
  // The NPU the npu units' points were measured on (needed when the SoC has an npu unit).
  const bool any_npu =
      std::any_of(s.units.begin(), s.units.end(), [](const ComputeUnit& u) { return u.static_graphs(); });
  const json& pp = root.contains("profile_points") ? root["profile_points"] : json();
  if (any_npu || (pp.is_object() && pp.contains("npu_target")))
    s.profile_npu_target = r.string("profile_points.npu_target");
  const json* points = r.array("profile_points.points");
  r.check_unknown();
  if (!r.status().ok()) return r.status();

  // Every point times the weight on every unit: out, in, n and one "<unit>_us" per unit.
  std::vector<std::string> fields = {"out", "in", "n"};
  std::string field_list = "out, in, n";
  for (const ComputeUnit& u : s.units) {
    fields.push_back(u.name + "_us");
    field_list += ", " + u.name + "_us";
  }
  for (size_t i = 0; i < points->size(); ++i) {
    const json& p = (*points)[i];
    const std::string where = file + ": profile_points.points[" + std::to_string(i) + "]";
    ProfilePoint pp;
    for (const std::string& k : fields) {
      if (!p.is_object() || !p.contains(k) || !p[k].is_number() || !(p[k].get<double>() > 0) ||
          !std::isfinite(p[k].get<double>())) {
        return InvalidArgument(where + ": field '" + k + "' must be a positive number, got " +
                               (p.is_object() && p.contains(k) ? p[k].dump() : std::string("nothing")));
      }
    }
    if (p.size() != fields.size()) return InvalidArgument(where + ": has fields other than " + field_list);
    for (const char* k : {"out", "in", "n"}) {
      if (!p[k].is_number_integer() || p[k].get<double>() > double(1 << 24)) {
        return InvalidArgument(where + ": field '" + k + "' must be an integer in 1..16777216, got " + p[k].dump());
      }
    }
    pp.out = p["out"].get<int64_t>();
    pp.in = p["in"].get<int64_t>();
    pp.n = p["n"].get<int64_t>();
    for (const ComputeUnit& u : s.units) pp.seconds[u.name] = p[u.name + "_us"].get<double>() * 1e-6;
    s.profile_points.push_back(pp);
  }
  for (const ComputeUnit& u : s.units) {
    if (!u.static_graphs() && u.kernels.achieved_flops > u.kernels.peak_flops) {
      return InvalidArgument(file + ": field 'units." + u.name + ".achieved_flops' (" +
                             std::to_string(u.kernels.achieved_flops) + ") exceeds 'units." + u.name +
                             ".peak_flops' (" + std::to_string(u.kernels.peak_flops) + ")");
    }
  }
  if (s.dram.achievable_bytes_per_s > s.dram.theoretical_bytes_per_s) {
    return InvalidArgument(file + ": field 'dram.achievable_bytes_per_s' exceeds 'dram.theoretical_bytes_per_s'");
  }
  TANDEM_RETURN_IF_ERROR(s.fit_kernel_units());
  for (size_t i = 0; i < s.units.size(); ++i) {
    ComputeUnit& u = s.units[i];
    if (!u.static_graphs()) continue;
    const std::string target_path = npu_dir + "/" + npu_targets[i] + ".json";
    auto t = npu::TargetModel::load(target_path);
    if (!t.ok()) {
      return InvalidArgument(file + ": field 'units." + u.name + ".target' ('" + npu_targets[i] +
                             "'): " + t.status().message());
    }
    u.npu.target = std::move(*t);
    // The SoC bounds what its NPU may draw from DRAM (MEM-1's per-processor cap): the target's DMA
    // model takes this SoC's figure.
    u.npu.target.ddr_single_processor_bytes_per_s = u.npu.dram_cap_bytes_per_s;
  }
  return s;
}

}  // namespace

Result<SocModel> SocModel::from_json_text(std::string_view text, const std::string& file, const std::string& npu_dir) {
  TANDEM_ASSIGN_OR_RETURN(json root, parse_json_text(text, file));
  try {
    return parse(root, file, npu_dir);
  } catch (const std::exception& e) {
    return InvalidArgument(file + ": " + e.what());
  }
}

Result<SocModel> SocModel::load(const std::string& path, const std::string& npu_dir) {
  TANDEM_ASSIGN_OR_RETURN(std::string text, read_text_file(path, "SoC description"));
  return from_json_text(text, path, npu_dir);
}

}  // namespace tandem::sim
