// Activations on the scaled fp16 grid for the products of F16 / BF16 weights with m > 1 that do
// not take the bf16 GEMM (WeightView::half_activations). AVX-512 decode (m = 1) reads its
// activations as fp16, for speed; the other sizes get the same rounded values here, so a row's
// result does not depend on the size of the batch it is in. Compiled with baseline flags.
#include <algorithm>
#include <cmath>

#include "core/half.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu::detail {

bool half_activation_scale(float amax, bool has_nan, float& scale, float& inverse_scale) {
  if (has_nan || !(amax <= 3.4e38f) || !(amax >= 1e-30f)) return false;
  int e;
  std::frexp(amax, &e);
  scale = std::ldexp(1.0f, 15 - e);
  inverse_scale = std::ldexp(1.0f, e - 15);
  return true;
}

bool rounds_to_half_grid(MatmulIsa isa, const WeightView& w, int64_t m, bool bf16_gemm) {
  return w.half_activations && isa == MatmulIsa::kAvx512 && (w.type == DType::F16 || w.type == DType::BF16) && m > 1 &&
         !bf16_gemm;
}

void round_to_half_grid(const float* x, int64_t m, int64_t ldx, int64_t n, float* out) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * ldx;
    float* dst = out + i * n;
    float amax = 0;
    bool has_nan = false;
    for (int64_t k = 0; k < n; ++k) {
      has_nan = has_nan || std::isnan(row[k]);
      amax = std::max(amax, std::fabs(row[k]));
    }
    float scale, unscale;
    if (!half_activation_scale(amax, has_nan, scale, unscale)) {
      std::copy(row, row + n, dst);
      continue;
    }
    for (int64_t k = 0; k < n; ++k) dst[k] = fp16_to_f32(f32_to_fp16(row[k] * scale)) * unscale;
  }
}

}  // namespace tandem::cpu::detail
