// A SoC description for the simulator (data/soc/*.json): its compute units (any number, each a
// name, a kind — gpu, cpu or npu, the devices' own vocabulary — and its own costs), DRAM shared by
// all of them, the host (the control thread: submits, polls, copies), synchronization costs and
// power. Every number carries its source (core/sourced_json.h).
//
// A unit of kind gpu or cpu runs kernels of any shape, one after another; its matmul latency is
// not a number in the file but a fit to the file's profile points (its column "<name>_us", SEEDS
// Table 3 inputs for the phones), so it is calibrated from characterization data, never tuned to
// an end-to-end result. A unit of kind npu runs static graphs on an npu::TargetModel (the one the
// npu device runs), scaled by a calibration fitted to the same points (sim/npu_calibration.h; the
// fit is written into the file because timing the points takes a second).
//
//   "units": {"gpu": {"kind": "gpu", "peak_flops": {...}, ..., "profile_scale": {...}},
//             "npu": {"kind": "npu", "target": "hexagon-v75", "submit_s": {...}, ...}}
//
// Units are kept in name order; a task names a device and runs on the unit of that name, else on
// the one unit of the device's kind (an "opencl" task on the unit of kind gpu).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "devices/device.h"
#include "npu/target_model.h"
#include "runtime/device_roles.h"
#include "sim/npu_calibration.h"

namespace tandem::sim {

// One measured matmul: weight [out x in] (W4A16), activation [in x n], timed on some of the units.
struct ProfilePoint {
  int64_t out = 0, in = 0, n = 0;
  std::map<std::string, double> seconds;  // by unit name
  double seconds_on(const std::string& unit) const;  // 0 when not timed there
  double weight_bytes() const;      // int4 weights + fp16 block scales (q4_0 layout: 18 B / 32)
  double activation_bytes() const;  // fp16 input and output
  double flops() const { return 2.0 * double(out) * double(in) * double(n); }
};

// GPU-1: latency = fixed + bytes / bandwidth + FLOPs / throughput (a fixed overhead plus linear in
// bytes and FLOPs), fitted by least squares on relative error. Any unit that runs kernels of any
// shape (a GPU, CPU cores) is described so.
struct KernelLatencyModel {
  double fixed_s = 0, s_per_byte = 0, s_per_flop = 0;
  double seconds(double bytes, double flops) const { return fixed_s + bytes * s_per_byte + flops * s_per_flop; }
  double bytes_per_s() const { return 1.0 / s_per_byte; }
  double flops_per_s() const { return 1.0 / s_per_flop; }
};
// Non-negative: the best fit, to the points' times on `unit`, among the models whose terms are all
// positive (a term may be 0). Errors with fewer than 3 points, a point without a time on the
// unit, or when no model with a byte or FLOP term fits.
Result<KernelLatencyModel> fit_kernel_latency(const std::vector<ProfilePoint>& points, const std::string& unit);

struct ComputeUnit {
  std::string name;  // its key under "units": tasks, traces and stats name it so
  devices::DeviceKind kind = devices::DeviceKind::kGpu;
  bool static_graphs() const { return kind == devices::DeviceKind::kNpu; }

  // Kind gpu or cpu: kernels of any shape, queued one after another.
  struct Kernels {
    double peak_flops = 0, achieved_flops = 0;
    double kernel_fixed_s = 0;  // non-matmul kernels
    double submit_s = 0;        // host time to enqueue a kernel
    double finish_s = 0;        // a blocking wait (clFinish)
    double dram_cap_bytes_per_s = 0;
    double active_w = 0, idle_w = 0;
    KernelLatencyModel matmul;  // fitted from the profile points, FLOP term divided by profile_scale
    double profile_scale = 1;
    // A non-matmul kernel in a queue of kernels: its launch, its DRAM bytes, its FLOPs.
    double op_seconds(double bytes, double flops) const {
      return kernel_fixed_s + bytes / dram_cap_bytes_per_s + flops / achieved_flops;
    }
  } kernels;
  // Kind npu: static graphs on a target model.
  struct Npu {
    npu::TargetModel target;  // "target": data/npu/<name>.json
    double dram_cap_bytes_per_s = 0, submit_s = 0, blocking_wait_s = 0, idle_w = 0;
    // The vendor stack's efficiency and shape penalty (stack_factor, shape_exponent): fitted to the
    // unit's profile points timed on the target they were measured on (profile_points.npu_target)
    // and written into the file; a test refits and compares.
    NpuCalibration calibration;
    double order_exchange_speedup = 0;  // SEEDS NPU-2 (measured)
  } npu;

  double submit_s() const { return static_graphs() ? npu.submit_s : kernels.submit_s; }
  // A blocking wait for the unit's work (clFinish, the NPU's interrupt path).
  double blocking_wait_s() const { return static_graphs() ? npu.blocking_wait_s : kernels.finish_s; }
};

struct SocModel {
  std::string name, description, file;
  std::string npu_dir;  // where npu targets are
  std::vector<ComputeUnit> units;  // by name
  struct Dram {
    double theoretical_bytes_per_s = 0, achievable_bytes_per_s = 0, pj_per_byte = 0;
  } dram;
  struct Sync {
    double usleep_granularity_s = 0, poll_s = 0, flag_write_s = 0;
  } sync;
  struct Host {
    double memcpy_bytes_per_s = 0, active_w = 0, idle_w = 0;
  } host;
  std::vector<ProfilePoint> profile_points;
  std::string profile_source;
  std::string profile_npu_target;  // the NPU the npu units' profile points were measured on

  // The unit of that name, or null.
  const ComputeUnit* find(const std::string& unit) const;
  ComputeUnit* find(const std::string& unit);
  // The first unit of that kind, or null.
  const ComputeUnit* of_kind(devices::DeviceKind kind) const;
  ComputeUnit* of_kind(devices::DeviceKind kind);
  // The index in `units` of the unit that runs tasks of `device` (a device name such as "opencl",
  // or a unit name): the unit of that name, else the one unit of the device's kind. The error
  // names the device and lists the SoC's units.
  Result<size_t> unit_for_device(const std::string& device) const;
  std::string unit_names() const;  // "gpu, npu"
  // The units by role, as a device set of their kinds would have them (runtime/device_roles.h):
  // the npu unit takes the NPU's role, the gpu (else the cpu) unit the GPU's. Unit names stand
  // for device names, so roles.apply_to(partition) runs a partition on these units.
  Result<DeviceRoles> roles() const;

  // npu_dir: where a unit's "target" names a file (<npu_dir>/<name>.json).
  static Result<SocModel> from_json_text(std::string_view text, const std::string& file, const std::string& npu_dir);
  static Result<SocModel> load(const std::string& path, const std::string& npu_dir);
  // data/soc/<name>.json of the source tree; the error lists the SoCs there.
  static Result<SocModel> load_named(const std::string& name);
  static std::vector<std::string> names();
  static std::string data_dir();
  // Refits an npu unit's calibration from its profile points (times each on profile_npu_target),
  // or from `points` where given (a subset, or points with a time moved).
  Result<NpuCalibration> fit_npu_calibration(const ComputeUnit& npu) const;
  Result<NpuCalibration> fit_npu_calibration(const ComputeUnit& npu, const std::vector<ProfilePoint>& points) const;
  // The NPU model the profile points' NPU times were measured on (profile_points.npu_target).
  Result<npu::TargetModel> profile_target(const ComputeUnit& npu) const;
  // Fits every kernel unit's matmul latency model to profile_points: the FLOP term divided by the
  // unit's profile_scale and no faster than its achieved_flops (SEEDS GPU-1). The reader calls it;
  // so does whoever moved a point.
  Status fit_kernel_units();
  // Refits an npu unit's naive_order_factor from its order_exchange_speedup (SEEDS NPU-2).
  Result<double> fit_naive_order_factor(const ComputeUnit& npu) const;
  // NPU-2's shape: [14336 x 4096] weights at 256 rows (the paper states no K; 256 is its
  // standard prompt length).
  static constexpr int64_t kOrderOut = 14336, kOrderIn = 4096, kOrderN = 256;
};

}  // namespace tandem::sim
