// A SoC description for the simulator (data/soc/*.json): the GPU, the NPU (its npu::TargetModel,
// the same one the npu device runs), DRAM shared by both, synchronization costs and power. Every
// number carries its source (core/sourced_json.h). The GPU's matmul latency model is not a number
// in the file but a fit to the file's profile points (SEEDS Table 3 inputs), so it is calibrated
// from characterization data, never tuned to an end-to-end result. The NPU's matmul times are the
// target model's, scaled by a calibration fitted to the same points (sim/npu_calibration.h; the
// fit is written into the file because timing the points takes a second).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "npu/target_model.h"
#include "sim/npu_calibration.h"

namespace tandem::sim {

// One measured matmul: weight [out x in] (W4A16), activation [in x n].
struct ProfilePoint {
  int64_t out = 0, in = 0, n = 0;
  double gpu_s = 0, npu_s = 0;
  double weight_bytes() const;      // int4 weights + fp16 block scales (q4_0 layout: 18 B / 32)
  double activation_bytes() const;  // fp16 input and output
  double flops() const { return 2.0 * double(out) * double(in) * double(n); }
};

// GPU-1: latency = fixed + bytes / bandwidth + FLOPs / throughput (a fixed overhead plus linear in
// bytes and FLOPs), fitted by least squares on relative error.
struct GpuLatencyModel {
  double fixed_s = 0, s_per_byte = 0, s_per_flop = 0;
  double seconds(double bytes, double flops) const { return fixed_s + bytes * s_per_byte + flops * s_per_flop; }
  double bytes_per_s() const { return 1.0 / s_per_byte; }
  double flops_per_s() const { return 1.0 / s_per_flop; }
};
// Non-negative: the best fit among the models whose terms are all positive (a term may be 0).
// Errors with fewer than 3 points or when no model with a byte or FLOP term fits.
Result<GpuLatencyModel> fit_gpu_latency(const std::vector<ProfilePoint>& points);

struct SocModel {
  std::string name, description, file;
  std::string npu_dir;  // where npu_target files are
  npu::TargetModel npu_target;

  struct Gpu {
    double peak_flops = 0, achieved_flops = 0;
    double kernel_fixed_s = 0;  // non-matmul kernels
    double submit_s = 0;        // host time to enqueue a kernel
    double finish_s = 0;        // a blocking wait (clFinish)
    double dram_cap_bytes_per_s = 0;
    double active_w = 0, idle_w = 0;
    GpuLatencyModel matmul;     // fitted from profile_points, FLOP term divided by profile_scale
    double profile_scale = 1;
    // A non-matmul kernel in a queue of kernels: its launch, its DRAM bytes, its FLOPs.
    double op_seconds(double bytes, double flops) const {
      return kernel_fixed_s + bytes / dram_cap_bytes_per_s + flops / achieved_flops;
    }
  } gpu;
  struct Npu {
    double dram_cap_bytes_per_s = 0, submit_s = 0, blocking_wait_s = 0, idle_w = 0;
    // The vendor stack's efficiency and shape penalty (npu.stack_factor, npu.shape_exponent):
    // fitted to the NPU profile points timed on the target they were measured on
    // (profile_points.npu_target) and written into the file; a test refits and compares.
    NpuCalibration calibration;
  } npu;
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
  std::string profile_npu_target;  // the NPU the profile points were measured on

  // npu_dir: where "npu_target" names a file (<npu_dir>/<name>.json).
  static Result<SocModel> from_json_text(std::string_view text, const std::string& file, const std::string& npu_dir);
  static Result<SocModel> load(const std::string& path, const std::string& npu_dir);
  // data/soc/<name>.json of the source tree; the error lists the SoCs there.
  static Result<SocModel> load_named(const std::string& name);
  static std::vector<std::string> names();
  static std::string data_dir();
  // Refits the NPU calibration from the profile points (times each on profile_npu_target).
  Result<NpuCalibration> fit_npu_calibration() const;
  // Refits npu.naive_order_factor from npu.order_exchange_speedup (SEEDS NPU-2) on the target.
  Result<double> fit_naive_order_factor() const;
  // NPU-2's shape: [14336 x 4096] weights at 256 rows (the paper states no K; 256 is its
  // standard prompt length).
  static constexpr int64_t kOrderOut = 14336, kOrderIn = 4096, kOrderN = 256;
  double order_exchange_speedup = 0;  // SEEDS NPU-2 (measured)
};

}  // namespace tandem::sim
