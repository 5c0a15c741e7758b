// The NPU's software-stack calibration. The npu::TargetModel times a matmul from the hardware
// (arrays, clock, TCM, DMA); a phone runs it through a vendor graph stack (QNN) that reaches a
// fraction of that, and worse on shapes the arrays dislike (SEEDS NPU-3: "NPU prefers inputs with
// more rows than columns"). Both are characterization facts measured by the solver profile points
// (SEEDS Table 3 inputs), so the simulator scales the model by
//
//     factor(out, in) = stack_factor * max(1, in / out) ^ shape_exponent
//
// fitted by least squares on log(measured / modeled) over those points — never to an end-to-end
// figure. The fit keeps its residuals so every report can show how well the model matches.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "npu/oplib/matmul.h"
#include "npu/target_model.h"

namespace tandem::sim {

struct ProfilePoint;

// One W4A16 matmul (weight [out x in] q4_0, activation [in x n] fp16) timed by the target's
// cost model alone: the operator library's program run by a timing-only Executor.
Result<double> npu_model_seconds(const npu::TargetModel& target, int64_t out, int64_t in, int64_t n,
                                 npu::oplib::MatmulOrder order = npu::oplib::MatmulOrder::kActivationStationary);

struct NpuCalibration {
  double stack_factor = 1;    // measured / modeled on shapes with in <= out
  double shape_exponent = 0;  // extra slowdown per log of in/out (NPU-3)
  double naive_order_factor = 1;  // extra slowdown of naive-order programs (NPU-2)
  struct Residual {
    int64_t out = 0, in = 0, n = 0;
    double measured_s = 0, model_s = 0, calibrated_s = 0;
  };
  std::vector<Residual> residuals;  // one per profile point
  std::string source;               // how it was obtained, for reports

  double factor(int64_t out, int64_t in) const;
  // Root-mean-square of log(calibrated / measured): 0.1 is about 10% typical error.
  double rms_log_error() const;
};

// SEEDS NPU-2: with the weights held in the arrays ("weight-stall", the naive order) a matmul is
// `measured_speedup` times slower than with the order exchange, for weight [out x in] at n rows.
// The target model's own held-operand swaps explain part of that; the factor returned scales the
// target's naive-order programs so the whole ratio is the measured one.
Result<double> fit_naive_order_factor(const npu::TargetModel& target, int64_t out, int64_t in, int64_t n, double measured_speedup);

// Fitted to the points' times on `unit`. Errors when no point has a time there. Without a point
// where in > out the shape exponent stays 0 (nothing measured it).
Result<NpuCalibration> fit_npu_calibration(const std::vector<ProfilePoint>& points, const std::string& unit,
                                           const npu::TargetModel& target);

}  // namespace tandem::sim
