#include "sim/soc_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>

#include "core/sourced_json.h"
#include "devices/registry.h"

namespace tandem::sim {

using nlohmann::json;

namespace {

// The kind of a device by its registry name (devices/registry.h) or a kind's own name.
std::optional<devices::DeviceKind> kind_of_device(const std::string& device) {
  if (std::optional<devices::DeviceKind> k = devices::device_kind_of(device)) return k;
  for (devices::DeviceKind k : {devices::DeviceKind::kCpu, devices::DeviceKind::kGpu, devices::DeviceKind::kNpu})
    if (device == devices::device_kind_name(k)) return k;
  return std::nullopt;
}

}  // namespace

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

Result<npu::TargetModel> SocModel::profile_target(const ComputeUnit& unit) const {
  if (!unit.static_graphs()) return InvalidArgument(file + ": unit '" + unit.name + "' is not an npu");
  if (profile_npu_target == unit.npu.target.name) return unit.npu.target;
  auto m = npu::TargetModel::load(npu_dir + "/" + profile_npu_target + ".json");
  if (!m.ok()) {
    return InvalidArgument(file + ": field 'profile_points.npu_target' ('" + profile_npu_target + "'): " + m.status().message());
  }
  return std::move(*m);
}

Result<NpuCalibration> SocModel::fit_npu_calibration(const ComputeUnit& unit) const {
  return fit_npu_calibration(unit, profile_points);
}

Result<NpuCalibration> SocModel::fit_npu_calibration(const ComputeUnit& unit, const std::vector<ProfilePoint>& points) const {
  TANDEM_ASSIGN_OR_RETURN(npu::TargetModel measured_on, profile_target(unit));
  auto cal = sim::fit_npu_calibration(points, unit.name, measured_on);
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
