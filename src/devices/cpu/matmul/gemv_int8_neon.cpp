// The aarch64 packed decode kernels for cores without the int8 dot product (ARMv8.0, e.g.
// Cortex-A53): sixteen s8 x s8 products widened to int16 (smull, smull2), then summed pairwise
// twice into the four rows' int32 (saddlp, addp). Exact: each product fits int16 (128 x 127).
#include <arm_neon.h>

namespace tandem::cpu::detail {
namespace {
inline int32x4_t dot_without_sdot(int32x4_t acc, int8x16_t w, int8x16_t x) {
  const int32x4_t rows01 = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)));  // r0 a, r0 b, r1 a, r1 b
  const int32x4_t rows23 = vpaddlq_s16(vmull_high_s8(w, x));
  return vaddq_s32(acc, vpaddq_s32(rows01, rows23));
}
}  // namespace
}  // namespace tandem::cpu::detail

#define TANDEM_NEON_DOT(acc, w, x) dot_without_sdot((acc), (w), (x))
#include "devices/cpu/matmul/gemv_int8_neon_body.h"

TANDEM_NEON_PACKED_TABLE(kNeonPacked)
