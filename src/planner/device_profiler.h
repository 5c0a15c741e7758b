// The offline profiler on this machine's real devices (SEEDS A.4), wall clock: the model's
// splittable weight shapes x standard lengths x partition ratios on every device of the set (any
// number, each recorded under its role: runtime/device_roles.h), plus the handoff cost of each
// sync protocol between the devices that exist, host copy bandwidth and the NPU's graph builds.
// Its measurements also describe this machine as a SoC (host_soc_json), one unit per device, so
// the simulator can predict the machine it runs on.
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

// What this machine measured of one device of the set.
struct MeasuredDevice {
  std::string name;  // the device ("opencl")
  devices::DeviceKind kind = devices::DeviceKind::kCpu;
  std::string role;  // what the cost DB records it under: "gpu", "npu" or "cpu" (a fallback)
  std::string unit;  // its unit in the host SoC description: its kind's name ("gpu", "npu", "cpu")
  double submit_s = 0;     // host time inside submit() of the smallest kernel
  double roundtrip_s = 0;  // submit + blocking wait of the smallest kernel
};

// What this machine measured besides the matmul points.
struct HostMeasurements {
  std::string cpu_name;
  std::vector<MeasuredDevice> devices;  // the set, in its order
  double memcpy_bytes_per_s = 0;
  double usleep_granularity_s = 0;  // what usleep(1) really sleeps
  double poll_s = 0;                // one read of a completion flag
  // The handoff the sync costs were measured on ("opencl -> npu": the GPU's role to the NPU's, or
  // to the fallback without an npu), or why none was (one device).
  std::string handoff;
  bool handoff_measured = false;
  // Whole weights at n = 1 and the largest standard length, timed on every device: seconds by the
  // device's unit name (MeasuredDevice::unit).
  std::vector<sim::ProfilePoint> points;
};

struct DeviceProfile {
  CostDb db;
  HostMeasurements host;
};

// This machine's processor, as /proc/cpuinfo names it ("unknown CPU" where it does not).
std::string cpu_model_name();

// `set`: open devices of `model` (weights mapped), at least one, one of each kind, at least one
// that runs any shape (cpu or gpu); reps: timed runs per point (the fastest counts).
Result<DeviceProfile> profile_devices(const std::vector<devices::Device*>& set, const Model& model, const ProfileSpace& space,
                                      int reps, const std::function<void(double)>& progress = {});

// A SoC description of this machine (data/soc format) from a device profile, one unit per device
// measured: every number is "measured by tandem profile --devices <set> on <cpu>" or an assumption
// with its reason; an npu unit is the emulated target `npu_target`, calibrated to the emulator's
// wall clock.
Result<std::string> host_soc_json(const DeviceProfile& profile, const std::string& npu_target, const std::string& npu_dir);

}  // namespace tandem::planner
