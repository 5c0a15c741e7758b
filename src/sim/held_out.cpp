#include "sim/held_out.h"

#include <cmath>

namespace tandem::sim {

namespace {

double held_out_rms_log(const std::vector<HeldOutPoint>& points, double HeldOutPoint::*predicted) {
  if (points.empty()) return 0;
  double sum = 0;
  for (const HeldOutPoint& p : points) sum += std::pow(std::log(p.*predicted / p.measured_s), 2);
  return std::sqrt(sum / double(points.size()));
}

std::vector<ProfilePoint> points_without(const std::vector<ProfilePoint>& points, size_t skip) {
  std::vector<ProfilePoint> rest;
  for (size_t i = 0; i < points.size(); ++i)
    if (i != skip) rest.push_back(points[i]);
  return rest;
}

Result<HeldOutUnit> held_out_kernels(const SocModel& soc, const ComputeUnit& u) {
  HeldOutUnit h{
      u.name, "fixed + bytes / bandwidth + FLOPs / throughput (SEEDS GPU-1), least squares on relative error", {}};
  TANDEM_ASSIGN_OR_RETURN(KernelLatencyModel all, fit_kernel_latency(soc.profile_points, u.name));
  for (size_t i = 0; i < soc.profile_points.size(); ++i) {
    const ProfilePoint& p = soc.profile_points[i];
    auto rest = fit_kernel_latency(points_without(soc.profile_points, i), u.name);
    if (!rest.ok())
      return InvalidArgument(soc.file + ": without profile point " + std::to_string(i) + ": " +
                             rest.status().message());
    const double bytes = p.weight_bytes() + p.activation_bytes();
    h.points.push_back(
        {p.out, p.in, p.n, p.seconds_on(u.name), all.seconds(bytes, p.flops()), rest->seconds(bytes, p.flops())});
  }
  return h;
}

Result<HeldOutUnit> held_out_npu(const SocModel& soc, const ComputeUnit& u) {
  TANDEM_ASSIGN_OR_RETURN(npu::TargetModel target, soc.profile_target(u));
  HeldOutUnit h{u.name,
                "the " + target.name +
                    " target model x stack factor x (in/out)^shape exponent (NPU-3), least squares on log error",
                {}};
  TANDEM_ASSIGN_OR_RETURN(NpuCalibration all, soc.fit_npu_calibration(u));
  for (size_t i = 0; i < soc.profile_points.size(); ++i) {
    const ProfilePoint& p = soc.profile_points[i];
    TANDEM_ASSIGN_OR_RETURN(NpuCalibration rest, soc.fit_npu_calibration(u, points_without(soc.profile_points, i)));
    TANDEM_ASSIGN_OR_RETURN(double model, npu_model_seconds(target, p.out, p.in, p.n));
    h.points.push_back(
        {p.out, p.in, p.n, p.seconds_on(u.name), model * all.factor(p.out, p.in), model * rest.factor(p.out, p.in)});
  }
  return h;
}

}  // namespace

double HeldOutUnit::rms_log_fitted() const { return held_out_rms_log(points, &HeldOutPoint::fitted_s); }
double HeldOutUnit::rms_log_held_out() const { return held_out_rms_log(points, &HeldOutPoint::held_out_s); }

Result<std::vector<HeldOutUnit>> leave_one_out(const SocModel& soc) {
  if (soc.profile_points.size() < 2)
    return InvalidArgument(soc.file + ": leave-one-out needs at least 2 profile points");
  std::vector<HeldOutUnit> units;
  for (const ComputeUnit& u : soc.units) {
    TANDEM_ASSIGN_OR_RETURN(HeldOutUnit h, u.static_graphs() ? held_out_npu(soc, u) : held_out_kernels(soc, u));
    units.push_back(std::move(h));
  }
  return units;
}

}  // namespace tandem::sim
