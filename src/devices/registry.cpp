#include "devices/registry.h"

#include "devices/cpu/cpu_device.h"
#include "devices/npu/npu_device.h"
#if TANDEM_HAVE_OPENCL
#include "devices/opencl/opencl_device.h"
#endif

namespace tandem::devices {

std::vector<std::string> device_names() { return {"cpu", "opencl", "npu"}; }

Result<std::unique_ptr<Device>> open_device(const std::string& name, std::shared_ptr<const Model> model,
                                            int n_threads) {
  if (name == "cpu") {
    if (n_threads < 1 || n_threads > 512) {
      return InvalidArgument("threads: " + std::to_string(n_threads) + " is out of range (1..512)");
    }
    return std::unique_ptr<Device>(new CpuDevice(n_threads));
  }
  if (name == "npu") {
    TANDEM_ASSIGN_OR_RETURN(npu::TargetModel t, npu::TargetModel::load_default());
    return std::unique_ptr<Device>(new NpuDevice(std::move(t)));
  }
  if (name == "opencl") {
#if TANDEM_HAVE_OPENCL
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<OpenclDevice> d, OpenclDevice::create(std::move(model)));
    return std::unique_ptr<Device>(std::move(d));
#else
    return Unsupported("device 'opencl': this build has no OpenCL (install ocl-icd-opencl-dev opencl-headers)");
#endif
  }
  return InvalidArgument("device '" + name + "' is unknown (known: cpu, opencl, npu)");
}

std::vector<DeviceListing> list_devices(std::shared_ptr<const Model> model, int n_threads) {
  std::vector<DeviceListing> out;
  for (const std::string& name : device_names()) {
    DeviceListing l{name, false, {}, {}};
    auto d = open_device(name, model, n_threads);
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
