#include "sim/npu_calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

#include "npu/executor.h"
#include "sim/soc_model.h"

namespace tandem::sim {

Result<double> npu_model_seconds(const npu::TargetModel& target, int64_t out, int64_t in, int64_t n,
                                 npu::oplib::MatmulOrder order) {
  // A program's time depends only on the target's numbers and the shape, and refits (held-out
  // validation, the report's per-point sensitivity) time the same points many times over.
  static std::mutex mu;
  static std::map<std::string, double> timed;
  const std::string key = target.fingerprint() + "|" + std::to_string(int(order)) + "|" + std::to_string(out) + "x" +
                          std::to_string(in) + "x" + std::to_string(n);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = timed.find(key); it != timed.end()) return it->second;
  }
  npu::oplib::MatmulSpec s;
  s.n = uint32_t(n);
  s.in = uint32_t(in);
  s.out = uint32_t(out);
  s.wtype = DType::Q4_0;
  s.order = order;
  TANDEM_ASSIGN_OR_RETURN(npu::Program program, npu::oplib::lower_matmul(s, target));
  npu::Executor exec(target);
  npu::ExecOptions timing_only;
  timing_only.functional = false;
  TANDEM_ASSIGN_OR_RETURN(npu::ExecReport r, exec.run(program, timing_only));
  std::lock_guard<std::mutex> lock(mu);
  timed[key] = r.seconds;
  return r.seconds;
}

Result<double> fit_naive_order_factor(const npu::TargetModel& target, int64_t out, int64_t in, int64_t n, double measured_speedup) {
  TANDEM_ASSIGN_OR_RETURN(double naive, npu_model_seconds(target, out, in, n, npu::oplib::MatmulOrder::kWeightStationary));
  TANDEM_ASSIGN_OR_RETURN(double exchanged, npu_model_seconds(target, out, in, n, npu::oplib::MatmulOrder::kActivationStationary));
  if (!(naive > 0 && exchanged > 0)) return Internal("npu order calibration: the target model timed a matmul at 0 s");
  // Never below 1: the stack does not make the naive order faster than the hardware model says.
  return std::max(1.0, measured_speedup / (naive / exchanged));
}

double NpuCalibration::factor(int64_t out, int64_t in) const {
  const double ratio = std::max(1.0, double(in) / double(std::max<int64_t>(1, out)));
  return stack_factor * std::pow(ratio, shape_exponent);
}

double NpuCalibration::rms_log_error() const {
  if (residuals.empty()) return 0;
  double sum = 0;
  for (const Residual& r : residuals) sum += std::pow(std::log(r.calibrated_s / r.measured_s), 2);
  return std::sqrt(sum / double(residuals.size()));
}

Result<NpuCalibration> fit_npu_calibration(const std::vector<ProfilePoint>& points, const std::string& unit,
                                           const npu::TargetModel& target) {
  NpuCalibration c;
  // Linear least squares in (log a, b): log(measured / model) = log a + b * log max(1, in/out).
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ProfilePoint& p : points) {
    const double measured = p.seconds_on(unit);
    if (!(measured > 0)) continue;
    TANDEM_ASSIGN_OR_RETURN(double model, npu_model_seconds(target, p.out, p.in, p.n));
    if (!(model > 0)) return Internal("npu calibration: the target model timed a profile point at 0 s");
    const double x = std::log(std::max(1.0, double(p.in) / double(p.out)));
    const double y = std::log(measured / model);
    n += 1; sx += x; sy += y; sxx += x * x; sxy += x * y;
    c.residuals.push_back({p.out, p.in, p.n, measured, model, 0});
  }
  if (n == 0) return InvalidArgument("npu calibration: no profile point has a time on " + unit);
  const double var = sxx - sx * sx / n;
  if (var > 1e-12) c.shape_exponent = (sxy - sx * sy / n) / var;
  // A negative exponent would reward wide weights; NPU-3 only ever penalizes them, so the fit is
  // constrained to >= 0 (then the stack factor alone is fitted).
  c.shape_exponent = std::max(0.0, c.shape_exponent);
  c.stack_factor = std::exp((sy - c.shape_exponent * sx) / n);
  for (NpuCalibration::Residual& r : c.residuals) r.calibrated_s = r.model_s * c.factor(r.out, r.in);
  c.source = "fitted to " + std::to_string(c.residuals.size()) + " NPU profile points on " + target.name;
  return c;
}

}  // namespace tandem::sim
