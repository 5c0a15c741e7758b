// Which devices this machine offers, and how to open one by name (cpu, opencl, npu).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "devices/device.h"

namespace tandem::devices {

struct DeviceListing {
  std::string name;
  bool available = false;
  DeviceCaps caps;          // valid when available
  std::string unavailable;  // why not, when not available
};

// Probes every device kind tandem knows (the model is needed to map weights; a tiny one works).
std::vector<DeviceListing> list_devices(std::shared_ptr<const Model> model, int n_threads);

// Opens a device by name; the error says why it cannot be opened and lists the known names.
Result<std::unique_ptr<Device>> open_device(const std::string& name, std::shared_ptr<const Model> model,
                                            int n_threads);

std::vector<std::string> device_names();

}  // namespace tandem::devices
