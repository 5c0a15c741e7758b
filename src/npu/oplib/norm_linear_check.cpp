#include "npu/oplib/norm_linear_check.h"

#include <cmath>
#include <random>

#include "core/half.h"
#include "npu/executor.h"

namespace tandem::npu::oplib {

Result<MatmulCheck> check_norm_linear_program(const Program& program, const NormLinearSpec& spec, DType source,
                                              uint32_t valid_rows, uint64_t seed, const TargetModel& t,
                                              uint32_t max_rows_checked) {
  const uint32_t n = spec.base.n, in = spec.base.in;
  if (valid_rows == 0 || valid_rows > n)
    return InvalidArgument("norm_linear check: valid_rows " + std::to_string(valid_rows) + " not in 1.." + std::to_string(n));
  if (program.buffers.size() != 2 + 2 * spec.outs.size())
    return InvalidArgument("norm_linear check: program declares " + std::to_string(program.buffers.size()) +
                           " buffers, the spec's " + std::to_string(spec.outs.size()) + " projections need " +
                           std::to_string(2 + 2 * spec.outs.size()));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.5f), gain(1.0f, 0.25f);
  std::vector<std::vector<float>> deq(spec.outs.size());
  std::vector<std::vector<uint8_t>> packs;
  for (size_t i = 0; i < spec.outs.size(); ++i) {
    TANDEM_ASSIGN_OR_RETURN(std::vector<uint8_t> rows, random_weight_rows(source, spec.outs[i], in, rng, deq[i]));
    TANDEM_ASSIGN_OR_RETURN(std::vector<uint8_t> pack,
                            pack_weights_from(spec.projection(i), t, source, rows.data(), rows.size()));
    packs.push_back(std::move(pack));
  }
  std::vector<fp16_t> x(size_t(n) * in, 0), g(in);
  for (size_t i = 0; i < size_t(valid_rows) * in; ++i) x[i] = f32_to_fp16(nd(rng));
  for (auto& v : g) v = f32_to_fp16(gain(rng));
  std::vector<std::vector<fp16_t>> y;
  for (uint32_t out : spec.outs) y.emplace_back(size_t(n) * out, 0x7e00);  // NaN: an output never written fails

  Executor ex(t);
  ex.bind_const(0, x.data(), x.size() * 2);
  ex.bind_const(1, g.data(), g.size() * 2);
  for (size_t i = 0; i < spec.outs.size(); ++i) {
    ex.bind_const(uint32_t(2 + i), packs[i].data(), packs[i].size());
    ex.bind(uint32_t(2 + spec.outs.size() + i), y[i].data(), y[i].size() * 2);
  }
  TANDEM_ASSIGN_OR_RETURN(ExecReport rep, ex.run(program, {true, false}));
  (void)rep;

  // The reference normalizes in double: x * g / sqrt(mean(x^2) + eps).
  std::vector<double> xn(x.size());
  for (uint32_t r = 0; r < n; ++r) {
    double ss = 0;
    for (uint32_t i = 0; i < in; ++i) ss += double(fp16_to_f32(x[size_t(r) * in + i])) * fp16_to_f32(x[size_t(r) * in + i]);
    const double scale = 1.0 / std::sqrt(ss / in + spec.eps);
    for (uint32_t i = 0; i < in; ++i)
      xn[size_t(r) * in + i] = double(fp16_to_f32(x[size_t(r) * in + i])) * scale * fp16_to_f32(g[i]);
  }
  MatmulCheck c;
  for (size_t i = 0; i < spec.outs.size(); ++i)
    compare_with_reference(y[i], xn, deq[i], n, in, spec.outs[i], valid_rows, max_rows_checked, 2, c);
  return c;
}

}  // namespace tandem::npu::oplib
