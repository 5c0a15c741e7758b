// Held-out validation of a SoC's calibration. Every model the simulator fits to the profile points
// (a kernel unit's matmul latency, an npu unit's stack calibration) is fitted again without one
// point and asked to predict it, for each point in turn (leave-one-out). The residuals of a fit
// that saw every point say how well it can bend to them; the held-out errors say how well it
// predicts a shape it was not given, which is what the simulator does with every other shape.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/soc_model.h"

namespace tandem::sim {

struct HeldOutPoint {
  int64_t out = 0, in = 0, n = 0;
  double measured_s = 0;
  double fitted_s = 0;    // by the model fitted to every point
  double held_out_s = 0;  // by the model fitted to every point but this one
};

struct HeldOutUnit {
  std::string unit;
  std::string model;  // what was fitted, for reports
  std::vector<HeldOutPoint> points;
  // Root-mean-square of log(predicted / measured) over the points: 0.1 is about 10% typical error.
  double rms_log_fitted() const;
  double rms_log_held_out() const;
};

// Every unit with times in the profile points, in the SoC's unit order. A kernel unit's model is
// its raw fit (before profile_scale, which maps the points to another SoC). Errors when a fit
// without one point has too few points left.
Result<std::vector<HeldOutUnit>> leave_one_out(const SocModel& soc);

}  // namespace tandem::sim
