// Held-out validation (sim/held_out.h): a point left out is predicted by the model fitted to the
// others, not by the one that saw it; and the shipped SoCs' queued GPU kernel cost is the
// derivation their files state, not a free constant.
#include "sim/held_out.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "sim/soc_model.h"

namespace tandem::sim {
namespace {

// Six points of a known kernel model on the sd8gen3 description's units; one point's gpu time is
// then off the model by half. Held out, that point is predicted by the other five, which lie on the
// model: the prediction is the model's time, not the measured one. The fit that saw it bends to it.
TEST(HeldOut, PredictsALeftOutPointFromTheOthers) {
  auto soc = SocModel::load_named("sd8gen3");
  ASSERT_TRUE(soc.ok()) << soc.status().message();
  const KernelLatencyModel truth{250e-6, 1.0 / 38e9, 1.0 / 0.85e12};
  soc->profile_points.clear();
  for (auto [out, in, n] : {std::tuple{4096, 4096, 1},
                            {28672, 4096, 1},
                            {4096, 14336, 1},
                            {4096, 4096, 128},
                            {4096, 4096, 256},
                            {4096, 14336, 256}}) {
    ProfilePoint p{out, in, n, {}};
    p.seconds["gpu"] = truth.seconds(p.weight_bytes() + p.activation_bytes(), p.flops());
    p.seconds["npu"] = p.seconds["gpu"];
    soc->profile_points.push_back(p);
  }
  const size_t off = 4;
  const double true_s = soc->profile_points[off].seconds["gpu"];
  soc->profile_points[off].seconds["gpu"] = 1.5 * true_s;
  auto held = leave_one_out(*soc);
  ASSERT_TRUE(held.ok()) << held.status().message();
  ASSERT_EQ(held->size(), 2u);
  const HeldOutUnit& gpu = (*held)[0];
  EXPECT_EQ(gpu.unit, "gpu");
  ASSERT_EQ(gpu.points.size(), 6u);
  EXPECT_NEAR(gpu.points[off].held_out_s / true_s, 1.0, 1e-6) << "the other five points lie on the model";
  EXPECT_GT(gpu.points[off].fitted_s / true_s, 1.01) << "the fit over all six is pulled toward the moved point";
  EXPECT_DOUBLE_EQ(gpu.points[off].measured_s, 1.5 * true_s);
  EXPECT_GT(gpu.rms_log_held_out(), gpu.rms_log_fitted()) << "predicting an unseen point is harder than fitting it";
  // The npu unit's calibration is left out the same way: its held-out predictions differ from the fit.
  const HeldOutUnit& npu = (*held)[1];
  EXPECT_EQ(npu.unit, "npu");
  ASSERT_EQ(npu.points.size(), 6u);
  bool any_differs = false;
  for (const HeldOutPoint& p : npu.points) any_differs |= std::abs(p.held_out_s / p.fitted_s - 1) > 1e-6;
  EXPECT_TRUE(any_differs);
}

TEST(HeldOut, NeedsPointsToLeaveOut) {
  auto soc = SocModel::load_named("sd8gen3");
  ASSERT_TRUE(soc.ok());
  soc->profile_points.resize(3);
  auto held = leave_one_out(*soc);
  ASSERT_FALSE(held.ok()) << "two points cannot fit a three-term model";
  EXPECT_NE(held.status().message().find("without profile point"), std::string::npos) << held.status().message();
}

// data/soc: kernel_fixed_s of the phones is derived, as its source says: the fit's fixed term less
// the blocking wait (GPU-2) that timing one kernel alone includes, never below 0.
TEST(SocModel, QueuedKernelCostIsDerived) {
  for (const std::string name : {"sd8gen3", "sd8elite"}) {
    auto soc = SocModel::load_named(name);
    ASSERT_TRUE(soc.ok()) << soc.status().message();
    const ComputeUnit& gpu = *soc->find("gpu");
    auto fit = fit_kernel_latency(soc->profile_points, "gpu");
    ASSERT_TRUE(fit.ok());
    EXPECT_NEAR(gpu.kernels.kernel_fixed_s, std::max(0.0, fit->fixed_s - gpu.kernels.finish_s), 1e-7) << name;
  }
}

}  // namespace
}  // namespace tandem::sim
