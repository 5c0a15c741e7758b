// The offline profiler on this machine's real devices (SEEDS A.4), wall clock: the model's
// splittable weight shapes x standard lengths x partition ratios on the GPU (OpenCL) and the NPU
// device, plus the handoff cost of each sync protocol, host copy bandwidth and the NPU's graph
// builds. Its measurements also describe this machine as a SoC (host_soc_json), so the simulator
// can predict the machine it runs on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "devices/device.h"
#include "model/model.h"
#include "planner/cost_db.h"
#include "planner/profiler.h"
#include "sim/soc_model.h"

namespace tandem::planner {

// What this machine measured besides the matmul points.
struct HostMeasurements {
  std::string gpu_name, npu_name, cpu_name;
  double memcpy_bytes_per_s = 0;
  double usleep_granularity_s = 0;  // what usleep(1) really sleeps
  double poll_s = 0;                // one read of a completion flag
  double gpu_submit_s = 0, npu_submit_s = 0;    // host time inside submit() of the smallest kernel
  double gpu_roundtrip_s = 0, npu_roundtrip_s = 0;  // submit + blocking wait of the smallest kernel
  std::vector<sim::ProfilePoint> points;  // whole weights at n = 1 and the largest standard length
};

struct DeviceProfile {
  CostDb db;
  HostMeasurements host;
};

// gpu and npu are open devices of `model` (weights mapped); reps: timed runs per point (median).
Result<DeviceProfile> profile_devices(devices::Device& gpu, devices::Device& npu, const Model& model, const ProfileSpace& space,
                                      int reps, const std::function<void(double)>& progress = {});

// A SoC description of this machine (data/soc format) from a device profile: every number is
// "measured by tandem profile --devices on <cpu>" or an assumption with its reason; the NPU is the
// emulated target `npu_target`, calibrated to the emulator's wall clock.
Result<std::string> host_soc_json(const DeviceProfile& profile, const std::string& npu_target, const std::string& npu_dir);

}  // namespace tandem::planner
