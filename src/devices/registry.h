// Which devices this machine offers, and how to open one by name: one table (registry.cpp) of
// every device tandem knows, each with its kind and a line saying what it is. Nothing else in
// tandem names a device: the runtime, planner and simulator take devices by kind and role
// (runtime/device_roles.h), and more than one device of a kind may be listed (the emulated npu
// and a real NPU), of which a run's --devices picks one per role.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/device.h"

namespace tandem::devices {

// One row of the registry.
struct DeviceEntry {
  std::string name;   // what --devices calls it ("opencl")
  DeviceKind kind;    // its kind, known without opening it
  std::string about;  // what it is and when to use it, one line
  // Opens it (the model maps its weights; may be null for listing) or says why it cannot here.
  Result<std::unique_ptr<Device>> (*open)(std::shared_ptr<const Model> model, int n_threads);
};

const std::vector<DeviceEntry>& device_table();

struct DeviceListing {
  std::string name;
  bool available = false;
  DeviceCaps caps;          // valid when available
  std::string unavailable;  // why not, when not available
  std::string about;        // the registry's line
};

// Probes every device in the table (the model is needed to map weights; a tiny one works).
std::vector<DeviceListing> list_devices(std::shared_ptr<const Model> model, int n_threads);

// Opens a device by name; the error says why it cannot be opened and lists the known names.
Result<std::unique_ptr<Device>> open_device(const std::string& name, std::shared_ptr<const Model> model,
                                            int n_threads);

std::vector<std::string> device_names();

// The kind of the device of that name in the table, or nullopt when there is none.
std::optional<DeviceKind> device_kind_of(const std::string& name);

}  // namespace tandem::devices
