#include "npu/oplib/elementwise_check.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "npu/executor.h"

namespace tandem::npu::oplib {

Result<ElementwiseCheck> check_elementwise_program(const Program& program, EltOp op, uint32_t n, uint32_t d, float eps,
                                                   uint64_t seed, const TargetModel& t) {
  if (n == 0 || d == 0) return InvalidArgument("elementwise check: n and d must be >= 1");
  if (program.buffers.size() != 3)
    return InvalidArgument("elementwise check: program " + program.name + " declares " +
                           std::to_string(program.buffers.size()) + " buffers, expected 3");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto random_f16 = [&](size_t count, float scale) {
    std::vector<fp16_t> v(count);
    for (auto& x : v) x = f32_to_fp16(nd(rng) * scale);
    return v;
  };
  const size_t act = size_t(n) * d;
  const auto a = random_f16(act, 2.0f);
  const auto b = random_f16(op == EltOp::kRmsNorm ? d : act, 1.0f);
  constexpr size_t kGuard = 32;  // fp16 values after y that must stay untouched
  std::vector<fp16_t> y(act + kGuard, 0x7e00);
  Executor ex(t);
  ex.bind_const(0, a.data(), a.size() * 2);
  ex.bind_const(1, b.data(), b.size() * 2);
  ex.bind(2, y.data(), act * 2);
  auto run = ex.run(program);
  if (!run.ok()) return run.status();
  ElementwiseCheck c;
  for (uint32_t r = 0; r < n; ++r) {
    double ss = 0;
    for (uint32_t i = 0; i < d; ++i) {
      const double v = fp16_to_f32(a[size_t(r) * d + i]);
      ss += v * v;
    }
    const double inv = 1.0 / std::sqrt(ss / d + eps);
    for (uint32_t i = 0; i < d; ++i) {
      const size_t k = size_t(r) * d + i;
      const double av = fp16_to_f32(a[k]);
      const double ref = op == EltOp::kRmsNorm ? av * inv * fp16_to_f32(b[i])
                         : op == EltOp::kSwiglu ? av / (1 + std::exp(-av)) * fp16_to_f32(b[k])
                                                : av + fp16_to_f32(b[k]);
      const double got = fp16_to_f32(y[k]);
      const double tol = std::ldexp(std::fabs(ref), -9) + 1e-4;
      const double ratio = std::fabs(got - ref) / tol;
      ++c.outputs_checked;
      if (!std::isfinite(got) || !(ratio <= 1)) ++c.failures;
      if (std::isfinite(ratio)) c.max_error_ratio = std::max(c.max_error_ratio, ratio);
    }
  }
  for (size_t g = 0; g < kGuard; ++g) c.wrote_past_output |= y[act + g] != 0x7e00;
  return c;
}

}  // namespace tandem::npu::oplib
