#include "runtime/device_roles.h"

namespace tandem {

const DeviceRoles::Member* DeviceRoles::find(const std::string& name) const {
  for (const Member& m : members)
    if (m.name == name) return &m;
  return nullptr;
}

std::string DeviceRoles::handoff_target() const {
  if (!npu.empty()) return npu;
  return fallbacks.empty() ? std::string() : fallbacks.front();
}

void DeviceRoles::apply_to(PartitionOptions& p) const {
  p.gpu = gpu;
  p.npu = npu;
  p.fallbacks = fallbacks;
}

Result<DeviceRoles> assign_roles(const std::vector<std::pair<std::string, devices::DeviceKind>>& set, const std::string& what) {
  if (set.empty()) return InvalidArgument(what + ": no devices");
  std::string gpu, cpu, npu;
  for (const auto& [name, kind] : set) {
    std::string* role = nullptr;
    switch (kind) {
      case devices::DeviceKind::kGpu: role = &gpu; break;
      case devices::DeviceKind::kCpu: role = &cpu; break;
      case devices::DeviceKind::kNpu: role = &npu; break;
    }
    if (!role->empty()) {
      return InvalidArgument(what + ": '" + *role + "' and '" + name + "' are both " + devices::device_kind_name(kind) +
                             "s (one device of each kind)");
    }
    *role = name;
  }
  if (gpu.empty() && cpu.empty()) {
    return InvalidArgument(what + ": '" + npu + "' runs static graphs only; add a device that runs any shape (cpu or opencl)");
  }
  DeviceRoles r;
  r.gpu = gpu.empty() ? cpu : gpu;
  r.npu = npu;
  if (!cpu.empty() && cpu != r.gpu) r.fallbacks.push_back(cpu);
  for (const auto& [name, kind] : set) {
    const std::string role = name == r.gpu ? "gpu" : name == r.npu ? "npu" : devices::device_kind_name(kind);
    r.members.push_back(DeviceRoles::Member{name, kind, role});
  }
  return r;
}

}  // namespace tandem
