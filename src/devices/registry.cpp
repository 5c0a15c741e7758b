#include "devices/registry.h"

#include "devices/cpu/cpu_device.h"
#include "devices/hexagon/hexagon_device.h"
#include "devices/npu/npu_device.h"
#if TANDEM_HAVE_OPENCL
#include "devices/opencl/opencl_device.h"
#endif

namespace tandem::devices {
namespace {

Result<std::unique_ptr<Device>> open_cpu(std::shared_ptr<const Model>, int n_threads) {
  if (n_threads < 1 || n_threads > 512) {
    return InvalidArgument("threads: " + std::to_string(n_threads) + " is out of range (1..512)");
  }
  return std::unique_ptr<Device>(new CpuDevice(n_threads));
}

Result<std::unique_ptr<Device>> open_opencl(std::shared_ptr<const Model> model, int) {
#if TANDEM_HAVE_OPENCL
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<OpenclDevice> d, OpenclDevice::create(std::move(model)));
  return std::unique_ptr<Device>(std::move(d));
#else
  (void)model;
  return Unsupported("device 'opencl': this build has no OpenCL (install ocl-icd-opencl-dev opencl-headers)");
#endif
}

Result<std::unique_ptr<Device>> open_emulated_npu(std::shared_ptr<const Model>, int) {
  TANDEM_ASSIGN_OR_RETURN(npu::TargetModel t, npu::TargetModel::load_default());
  return std::unique_ptr<Device>(new NpuDevice(std::move(t)));
}

Result<std::unique_ptr<Device>> open_hexagon(std::shared_ptr<const Model> model, int) {
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<HexagonDevice> d, HexagonDevice::open(std::move(model)));
  return std::unique_ptr<Device>(std::move(d));
}

Result<std::unique_ptr<Device>> open_hexagon_oracle(std::shared_ptr<const Model>, int) {
  return std::unique_ptr<Device>(HexagonDevice::open_host_oracle());
}

}  // namespace

const std::vector<DeviceEntry>& device_table() {
  static const std::vector<DeviceEntry> table = {
      {"cpu", DeviceKind::kCpu, "the host's cores (AVX2/AVX-512, NEON): every op, any shape", open_cpu},
      {"opencl", DeviceKind::kGpu, "an OpenCL 3.0 device (a phone's GPU; PoCL on a PC): every op, any shape", open_opencl},
      {"npu", DeviceKind::kNpu,
       "the emulated NPU: a functional fp16 executor with a timing model of the target (data/npu); "
       "for the simulator and machines without a real NPU",
       open_emulated_npu},
      {"hexagon", DeviceKind::kNpu,
       "the real NPU ISA: Hexagon v66 HVX-128 code in a DSP process (qemu-hexagon here; int8 activations x "
       "Q4_0/Q8_0 weights, bit-exact with its host oracle); for tokens computed by NPU instructions",
       open_hexagon},
      {"hexagon-ref", DeviceKind::kNpu,
       "the hexagon device's arithmetic computed on the host by its oracle, no DSP: what a hexagon run must "
       "equal bit for bit (the same shares, graphs and refusals); any machine",
       open_hexagon_oracle},
  };
  return table;
}

std::vector<std::string> device_names() {
  std::vector<std::string> out;
  for (const DeviceEntry& e : device_table()) out.push_back(e.name);
  return out;
}

std::optional<DeviceKind> device_kind_of(const std::string& name) {
  for (const DeviceEntry& e : device_table())
    if (e.name == name) return e.kind;
  return std::nullopt;
}

Result<std::unique_ptr<Device>> open_device(const std::string& name, std::shared_ptr<const Model> model,
                                            int n_threads) {
  for (const DeviceEntry& e : device_table())
    if (e.name == name) return e.open(std::move(model), n_threads);
  std::string known;
  for (const DeviceEntry& e : device_table()) known += (known.empty() ? "" : ", ") + e.name;
  return InvalidArgument("device '" + name + "' is unknown (known: " + known + ")");
}

std::vector<DeviceListing> list_devices(std::shared_ptr<const Model> model, int n_threads) {
  std::vector<DeviceListing> out;
  for (const DeviceEntry& e : device_table()) {
    DeviceListing l;
    l.name = e.name;
    l.about = e.about;
    auto d = e.open(model, n_threads);
    if (d.ok()) {
      l.available = true;
      l.caps = (*d)->caps();
    } else {
      l.unavailable = d.status().message();
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace tandem::devices
