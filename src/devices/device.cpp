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

Result<PrepareReport> prepare_graph(Device& d, const GraphSpec& spec) {
  if (StaticGraphs* g = d.static_graphs()) return g->prepare(spec);
  return PrepareReport{true, 0.0};  // dynamic-shape devices run any shape as it comes
}

uint64_t bytes_copied(const Device& d) {
  const MemoryTraffic* t = d.memory_traffic();
  return t ? t->bytes_copied() : 0;
}

uint64_t bytes_converted(const Device& d) {
  const MemoryTraffic* t = d.memory_traffic();
  return t ? t->bytes_converted() : 0;
}

}  // namespace tandem::devices
