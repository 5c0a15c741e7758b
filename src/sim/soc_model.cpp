#include "sim/soc_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>

#include "core/sourced_json.h"

namespace tandem::sim {

using nlohmann::json;

double ProfilePoint::seconds_on(const std::string& unit) const {
  auto it = seconds.find(unit);
  return it == seconds.end() ? 0.0 : it->second;
}

double ProfilePoint::weight_bytes() const { return double(out) * double(in) * 18.0 / 32.0; }
double ProfilePoint::activation_bytes() const { return double(n) * double(in + out) * 2.0; }

namespace {

// Least squares on relative error over the coefficients in `use` (fixed, s/byte, s/flop); the
// others stay 0. Columns are scaled to O(1) (us, MB, GFLOP) for a well-conditioned solve.
// Returns false if the normal equations are singular; *sse gets the sum of squared errors.
bool solve_subset(const std::vector<ProfilePoint>& points, const std::string& unit, const std::array<bool, 3>& use,
                  std::array<double, 3>* coef, double* sse) {
  std::vector<int> cols;
  for (int i = 0; i < 3; ++i)
    if (use[size_t(i)]) cols.push_back(i);
  const size_t k = cols.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));  // [A^T A | A^T b]
  auto row_of = [&unit](const ProfilePoint& p) {
    const double t = p.seconds_on(unit) * 1e6;
    return std::array<double, 3>{1.0 / t, (p.weight_bytes() + p.activation_bytes()) / 1e6 / t, p.flops() / 1e9 / t};
  };
  for (const ProfilePoint& p : points) {
    const auto row = row_of(p);
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < k; ++j) m[i][j] += row[size_t(cols[i])] * row[size_t(cols[j])];
      m[i][k] += row[size_t(cols[i])];
    }
  }
  for (size_t c = 0; c < k; ++c) {  // Gauss-Jordan with partial pivoting
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    std::swap(m[c], m[piv]);
    if (std::abs(m[c][c]) < 1e-300) return false;
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (size_t q = c; q <= k; ++q) m[r][q] -= f * m[c][q];
    }
  }
  *coef = {0, 0, 0};
  for (size_t i = 0; i < k; ++i) (*coef)[size_t(cols[i])] = m[i][k] / m[i][i];
  *sse = 0;
  for (const ProfilePoint& p : points) {
    const auto row = row_of(p);
    double pred = 0;
    for (int i = 0; i < 3; ++i) pred += row[size_t(i)] * (*coef)[size_t(i)];
    *sse += (pred - 1.0) * (pred - 1.0);
  }
  return true;
}

}  // namespace

Result<KernelLatencyModel> fit_kernel_latency(const std::vector<ProfilePoint>& points, const std::string& unit) {
  if (points.size() < 3) {
    return InvalidArgument(unit + " latency fit: needs at least 3 profile points, got " + std::to_string(points.size()));
  }
  for (const ProfilePoint& p : points)
    if (!(p.seconds_on(unit) > 0)) return InvalidArgument(unit + " latency fit: a profile point has no time on " + unit);
  // Minimize sum ((model(p) - t_p) / t_p)^2: every point counts by its relative error, so the short
  // decode kernels weigh as much as the long prefill ones. Latency cannot have a negative term, so
  // this is non-negative least squares: the best fit over the subsets of terms whose coefficients
  // all come out positive (the full model first; a machine whose points show no fixed cost, say,
  // gets none). Bytes or FLOPs must be in it.
  double best_sse = INFINITY;
  std::array<double, 3> best{};
  for (int mask = 7; mask >= 2; --mask) {
    const std::array<bool, 3> use = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    if (!use[1] && !use[2]) continue;
    std::array<double, 3> coef{};
    double sse = 0;
    if (!solve_subset(points, unit, use, &coef, &sse)) continue;
    bool positive = true;
    for (int i = 0; i < 3; ++i)
      if (use[size_t(i)] && !(coef[size_t(i)] > 0)) positive = false;
    if (positive && sse < best_sse * (1 - 1e-12)) {
      best_sse = sse;
      best = coef;
    }
  }
  if (!std::isfinite(best_sse)) {
    return InvalidArgument(unit + " latency fit: the profile points give no model with positive byte or FLOP cost");
  }
  KernelLatencyModel g;
  g.fixed_s = best[0] * 1e-6;
  g.s_per_byte = best[1] * 1e-6 / 1e6;
  g.s_per_flop = best[2] * 1e-6 / 1e9;
  return g;
}

namespace {

std::optional<devices::DeviceKind> kind_named(const std::string& name) {
  for (devices::DeviceKind k : {devices::DeviceKind::kCpu, devices::DeviceKind::kGpu, devices::DeviceKind::kNpu})
    if (name == devices::device_kind_name(k)) return k;
  return std::nullopt;
}

// The kind of a device by its registry name (devices/registry.h: cpu, opencl, npu) or a kind's
// own name.
std::optional<devices::DeviceKind> kind_of_device(const std::string& device) {
  if (device == "opencl") return devices::DeviceKind::kGpu;
  return kind_named(device);
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
    return InvalidArgument(file + ": top-level 'gpu', 'npu' and 'npu_target' are the old layout: each unit is now a section of "
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
    return InvalidArgument(file + ": field 'units' must be an object with at least one unit ({\"<name>\": {\"kind\": \"gpu\"|\"cpu\"|\"npu\", ...}}), got " +
                           (root.contains("units") ? root["units"].dump().substr(0, 80) : std::string("nothing")));
  }
  std::vector<std::string> npu_targets;  // per unit ("" for kernel units)
  for (auto it = root["units"].begin(); it != root["units"].end(); ++it) {
    const std::string& name = it.key();
    if (!valid_unit_name(name) || reserved_unit_name(name)) {
      return InvalidArgument(file + ": unit name 'units." + name + "' must be 1-32 of [a-z0-9_-] and not host, sync or phase");
    }
    const std::string u = "units." + name + ".";
    ComputeUnit unit;
    unit.name = name;
    const std::string kind = r.string(u + "kind");
    if (!r.status().ok()) return r.status();
    const auto k = kind_named(kind);
    if (!k) return InvalidArgument(file + ": field '" + u + "kind' must be \"gpu\", \"cpu\" or \"npu\", got \"" + kind + "\"");
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
      g.kernel_fixed_s = r.number(u + "kernel_fixed_s");
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
  const bool any_npu = std::any_of(s.units.begin(), s.units.end(), [](const ComputeUnit& u) { return u.static_graphs(); });
  const json& pp = root.contains("profile_points") ? root["profile_points"] : json();
  if (any_npu || (pp.is_object() && pp.contains("npu_target"))) s.profile_npu_target = r.string("profile_points.npu_target");
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
      if (!p.is_object() || !p.contains(k) || !p[k].is_number() || !(p[k].get<double>() > 0) || !std::isfinite(p[k].get<double>())) {
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
      return InvalidArgument(file + ": field 'units." + u.name + ".achieved_flops' (" + std::to_string(u.kernels.achieved_flops) +
                             ") exceeds 'units." + u.name + ".peak_flops' (" + std::to_string(u.kernels.peak_flops) + ")");
    }
  }
  if (s.dram.achievable_bytes_per_s > s.dram.theoretical_bytes_per_s) {
    return InvalidArgument(file + ": field 'dram.achievable_bytes_per_s' exceeds 'dram.theoretical_bytes_per_s'");
  }
  for (size_t i = 0; i < s.units.size(); ++i) {
    ComputeUnit& u = s.units[i];
    if (!u.static_graphs()) {
      auto& g = u.kernels;
      auto fit = fit_kernel_latency(s.profile_points, u.name);
      if (!fit.ok()) return InvalidArgument(file + ": " + fit.status().message());
      g.matmul = *fit;
      g.matmul.s_per_flop /= g.profile_scale;
      // The FLOP term may not promise more than the unit achieves (SEEDS GPU-1).
      g.matmul.s_per_flop = std::max(g.matmul.s_per_flop, 1.0 / g.achieved_flops);
      continue;
    }
    const std::string target_path = npu_dir + "/" + npu_targets[i] + ".json";
    auto t = npu::TargetModel::load(target_path);
    if (!t.ok()) {
      return InvalidArgument(file + ": field 'units." + u.name + ".target' ('" + npu_targets[i] + "'): " + t.status().message());
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

std::string SocModel::data_dir() {
#ifdef TANDEM_DATA_DIR
  return TANDEM_DATA_DIR;
#else
  return "data";
#endif
}

std::vector<std::string> SocModel::names() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir() + "/soc", ec))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

const ComputeUnit* SocModel::find(const std::string& unit) const {
  for (const ComputeUnit& u : units)
    if (u.name == unit) return &u;
  return nullptr;
}

ComputeUnit* SocModel::find(const std::string& unit) {
  return const_cast<ComputeUnit*>(static_cast<const SocModel*>(this)->find(unit));
}

const ComputeUnit* SocModel::of_kind(devices::DeviceKind kind) const {
  for (const ComputeUnit& u : units)
    if (u.kind == kind) return &u;
  return nullptr;
}

ComputeUnit* SocModel::of_kind(devices::DeviceKind kind) {
  return const_cast<ComputeUnit*>(static_cast<const SocModel*>(this)->of_kind(kind));
}

std::string SocModel::unit_names() const {
  std::string out;
  for (const ComputeUnit& u : units) out += (out.empty() ? "" : ", ") + u.name;
  return out;
}

Result<DeviceRoles> SocModel::roles() const {
  std::vector<std::pair<std::string, devices::DeviceKind>> set;
  for (const ComputeUnit& u : units) set.emplace_back(u.name, u.kind);
  return assign_roles(set, file + ": units");
}

Result<size_t> SocModel::unit_for_device(const std::string& device) const {
  for (size_t i = 0; i < units.size(); ++i)
    if (units[i].name == device) return i;
  const std::optional<devices::DeviceKind> kind = kind_of_device(device);
  std::vector<size_t> of_kind;
  for (size_t i = 0; kind && i < units.size(); ++i)
    if (units[i].kind == *kind) of_kind.push_back(i);
  if (of_kind.size() == 1) return of_kind[0];
  const std::string what = kind ? std::string(" (a ") + devices::device_kind_name(*kind) + ")" : std::string();
  if (of_kind.size() > 1) {
    return InvalidArgument("simulator: device '" + device + "'" + what + " could run on several units of " + name +
                           " (" + unit_names() + "); name one");
  }
  return InvalidArgument("simulator: " + name + " has no unit for device '" + device + "'" + what + "; its units: " + unit_names());
}

Result<NpuCalibration> SocModel::fit_npu_calibration(const ComputeUnit& unit) const {
  if (!unit.static_graphs()) return InvalidArgument(file + ": unit '" + unit.name + "' is not an npu");
  npu::TargetModel measured_on = unit.npu.target;
  if (profile_npu_target != unit.npu.target.name) {
    auto m = npu::TargetModel::load(npu_dir + "/" + profile_npu_target + ".json");
    if (!m.ok()) {
      return InvalidArgument(file + ": field 'profile_points.npu_target' ('" + profile_npu_target + "'): " + m.status().message());
    }
    measured_on = std::move(*m);
  }
  auto cal = sim::fit_npu_calibration(profile_points, unit.name, measured_on);
  if (!cal.ok()) return InvalidArgument(file + ": " + cal.status().message());
  return cal;
}

Result<double> SocModel::fit_naive_order_factor(const ComputeUnit& unit) const {
  if (!unit.static_graphs()) return InvalidArgument(file + ": unit '" + unit.name + "' is not an npu");
  return sim::fit_naive_order_factor(unit.npu.target, kOrderOut, kOrderIn, kOrderN, unit.npu.order_exchange_speedup);
}

Result<SocModel> SocModel::load_named(const std::string& name) {
  const std::vector<std::string> all = names();
  if (std::find(all.begin(), all.end(), name) == all.end()) {
    std::string list;
    for (const std::string& n : all) list += (list.empty() ? "" : ", ") + n;
    return NotFound("--soc: '" + name + "' is not a described SoC (" + (list.empty() ? "none found in " + data_dir() + "/soc" : list) + ")");
  }
  return load(data_dir() + "/soc/" + name + ".json", data_dir() + "/npu");
}

}  // namespace tandem::sim
