#include "npu/oplib/matmul_check.h"

#include <cmath>
#include <random>

#include "core/half.h"
#include "core/quant.h"
#include "npu/executor.h"

namespace tandem::npu::oplib {

Result<std::vector<uint8_t>> random_weight_rows(DType source, uint32_t out, uint32_t in, std::mt19937_64& rng,
                                                std::vector<float>& deq) {
  std::normal_distribution<float> nd(0.0f, 0.5f);
  const size_t rb = row_bytes(source, in);
  std::vector<uint8_t> rows(rb * out);
  std::vector<float> w(in);
  deq.assign(size_t(out) * in, 0.0f);
  for (uint32_t o = 0; o < out; ++o) {
    for (auto& v : w) v = nd(rng);
    uint8_t* dst = rows.data() + rb * o;
    float* d = deq.data() + size_t(o) * in;
    if (source == DType::F16) {
      auto* h = reinterpret_cast<fp16_t*>(dst);
      for (uint32_t i = 0; i < in; ++i) d[i] = fp16_to_f32(h[i] = f32_to_fp16(w[i]));
    } else if (source == DType::Q8_0) {
      quantize_row_q8_0(w.data(), reinterpret_cast<BlockQ8_0*>(dst), in);
      dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(dst), d, in);
    } else if (source == DType::Q4_0) {
      quantize_row_q4_0(w.data(), reinterpret_cast<BlockQ4_0*>(dst), in);
      dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(dst), d, in);
    } else {
      return Unsupported("matmul check: source format " + std::string(dtype_name(source)));
    }
  }
  return rows;
}

void compare_with_reference(const std::vector<fp16_t>& y, const std::vector<double>& x, const std::vector<float>& deq,
                            uint32_t n, uint32_t in, uint32_t out, uint32_t valid_rows, uint32_t max_rows_checked,
                            double extra_roundings, MatmulCheck& c) {
  // Rows compared against the reference.
  std::vector<bool> compare(n, max_rows_checked == 0);
  if (max_rows_checked > 0) {
    const uint32_t k = std::min(max_rows_checked, valid_rows);
    for (uint32_t i = 0; i < k; ++i) compare[k == 1 ? 0 : uint64_t(i) * (valid_rows - 1) / (k - 1)] = true;
  }
  const double ulp = std::ldexp(1.0, -11);
  const double roundings = double((in + 31) / 32) + 1 + extra_roundings;
  for (uint32_t r = 0; r < n; ++r)
    for (uint32_t o = 0; o < out; ++o) {
      const double got = fp16_to_f32(y[size_t(r) * out + o]);
      if (r >= valid_rows) {
        if (got != 0) c.padding_untouched = false;
        continue;
      }
      if (!compare[r]) continue;
      double ref = 0, mag = 0;
      for (uint32_t i = 0; i < in; ++i) {
        const double p = x[size_t(r) * in + i] * deq[size_t(o) * in + i];
        ref += p;
        mag += std::fabs(p);
      }
      const double tol = roundings * ulp * mag + 1e-6;
      const double ratio = std::fabs(got - ref) / tol;
      ++c.outputs_checked;
      if (!std::isfinite(got) || !(ratio <= 1)) ++c.failures;
      if (std::isfinite(ratio)) c.max_error_ratio = std::max(c.max_error_ratio, ratio);
      else c.max_error_ratio = INFINITY;
    }
}

Result<MatmulCheck> check_matmul_program(const Program& program, const MatmulSpec& spec, DType source,
                                         uint32_t valid_rows, uint64_t seed, const TargetModel& t,
                                         uint32_t max_rows_checked) {
  if (valid_rows == 0 || valid_rows > spec.n)
    return InvalidArgument("matmul check: valid_rows " + std::to_string(valid_rows) + " not in 1.." + std::to_string(spec.n));
  std::mt19937_64 rng(seed);
  std::vector<float> deq;
  TANDEM_ASSIGN_OR_RETURN(std::vector<uint8_t> rows, random_weight_rows(source, spec.out, spec.in, rng, deq));
  std::normal_distribution<float> nd(0.0f, 0.5f);
  TANDEM_ASSIGN_OR_RETURN(std::vector<uint8_t> pack, pack_weights_from(spec, t, source, rows.data(), rows.size()));
  std::vector<fp16_t> x(size_t(spec.n) * spec.in, 0);
  for (size_t i = 0; i < size_t(valid_rows) * spec.in; ++i) x[i] = f32_to_fp16(nd(rng));
  std::vector<fp16_t> y(size_t(spec.n) * spec.out, 0x7e00);  // NaN: an output never written fails

  Executor ex(t);
  ex.bind_const(0, x.data(), x.size() * 2);
  ex.bind_const(1, pack.data(), pack.size());
  ex.bind(2, y.data(), y.size() * 2);
  TANDEM_ASSIGN_OR_RETURN(ExecReport rep, ex.run(program, {true, false}));
  (void)rep;

  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) xd[i] = fp16_to_f32(x[i]);
  MatmulCheck c;
  compare_with_reference(y, xd, deq, spec.n, spec.in, spec.out, valid_rows, max_rows_checked, 0, c);
  return c;
}

}  // namespace tandem::npu::oplib
