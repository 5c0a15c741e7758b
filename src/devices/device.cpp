#include "devices/device.h"

namespace tandem::devices {

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kNpu: return "npu";
  }
  return "?";
}

Result<PrepareReport> Device::prepare(const GraphSpec&) {
  return PrepareReport{true, 0.0};  // dynamic-shape devices run any shape as it comes
}

}  // namespace tandem::devices
