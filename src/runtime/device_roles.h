// Devices by role (ARCHITECTURE "devices by role and capability, not by name"): a set of devices,
// each of a kind (devices::DeviceKind), gets the partitioner's roles. The npu takes the NPU's role
// (static graphs: split matmuls); the gpu, else the cpu, takes the GPU's (any shape: every op but
// a split matmul); the cpu, where the gpu has the GPU's role, is the fallback for what the gpu's
// device does not support. One device of each kind. The real runtime (hetero_forward), the
// profilers and the simulator (a SoC's units) all take their roles from here.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "devices/device.h"
#include "runtime/partition.h"

namespace tandem {

struct DeviceRoles {
  struct Member {
    std::string name;
    devices::DeviceKind kind = devices::DeviceKind::kCpu;
    // What the device is recorded under (cost DB units, profiles): "gpu" for the GPU's role, "npu"
    // for the NPU's, and a fallback's own kind name ("cpu").
    std::string role;
  };
  std::string gpu;                     // the GPU's role
  std::string npu;                     // the NPU's role; "" when the set has no npu
  std::vector<std::string> fallbacks;  // in order
  std::vector<Member> members;         // every device of the set, in the set's order

  // The member of that name, or null.
  const Member* find(const std::string& name) const;
  // Where the handoff the runtime pays most goes from `gpu`: the npu, else the first fallback;
  // "" for a set of one device (no handoff between devices).
  std::string handoff_target() const;
  // Sets the partitioner's roles (gpu, npu, fallbacks); the strategy and the rest stay.
  void apply_to(PartitionOptions& p) const;
};

// `set`: (name, kind) of each device. `what` begins every error ("--devices", "sd8gen3.json: units"):
// two devices of one kind, or no device that runs any shape (an npu alone), or an empty set.
Result<DeviceRoles> assign_roles(const std::vector<std::pair<std::string, devices::DeviceKind>>& set, const std::string& what);

}  // namespace tandem
