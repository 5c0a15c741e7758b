// NEON decode kernels (m <= 8), the scheme of gemv_avx2.cpp with 4-lane vectors: several weight
// rows per pass share each activation load, each decoded block is shared by all activations,
// fp32 activations and accumulators (W4A16). A 32-column block is eight float32x4; with 32
// registers, 4 rows pass together for m = 1, 2 for m <= 3, 1 beyond.
#include <arm_neon.h>

#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/simd_neon.h"
#include "devices/cpu/matmul/weight_blocks_neon.h"

namespace tandem::cpu::detail {
namespace {

template <class W, int R, int M>
void gemv_tile(const MatmulArgs& a, int64_t r) {
  const char* rows[R];
  for (int rr = 0; rr < R; ++rr) rows[rr] = static_cast<const char*>(a.w.data) + size_t(r + rr) * a.w.row_bytes;
  const int64_t blocks = a.w.cols / 32;
  float32x4_t acc[R][M];
  for (int rr = 0; rr < R; ++rr)
    for (int i = 0; i < M; ++i) acc[rr][i] = vdupq_n_f32(0.0f);

  for (int64_t b = 0; b < blocks; ++b) {
    for (int rr = 0; rr < R; ++rr) {
      float32x4_t v[8];
      W::levels(rows[rr], b, v);
      if constexpr (W::kScaled) {
        const float d = W::scale(rows[rr], b);
        if constexpr (M == 1) {
          const float* x = a.x + b * 32;
          float32x4_t t = vmulq_f32(v[0], vld1q_f32(x));
          for (int j = 1; j < 8; ++j) t = vfmaq_f32(t, v[j], vld1q_f32(x + 4 * j));
          acc[rr][0] = vfmaq_n_f32(acc[rr][0], t, d);
          continue;
        }
        for (int j = 0; j < 8; ++j) v[j] = vmulq_n_f32(v[j], d);
      }
      for (int i = 0; i < M; ++i) {
        const float* x = a.x + i * a.ldx + b * 32;
        for (int j = 0; j < 8; ++j) acc[rr][i] = vfmaq_f32(acc[rr][i], v[j], vld1q_f32(x + 4 * j));
      }
    }
  }
  for (int i = 0; i < M; ++i) {
    for (int rr = 0; rr < R; ++rr) {
      float s = vaddvq_f32(acc[rr][i]);
      if constexpr (!W::kScaled)
        for (int64_t k = blocks * 32; k < a.w.cols; ++k) s += W::tail_value(rows[rr], k) * a.x[i * a.ldx + k];
      a.y[i * a.ldy + r + rr] = s;
    }
  }
}

template <class W, int M>
void gemv_rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  constexpr int R = M == 1 ? 4 : M <= 3 ? 2 : 1;
  int64_t r = r0;
  for (; r + R <= r1; r += R) gemv_tile<W, R, M>(a, r);
  for (; r < r1; ++r) gemv_tile<W, 1, M>(a, r);
}

template <class W>
void gemv(const MatmulArgs& a, int64_t r0, int64_t r1) {
  switch (a.m) {
    case 1:
      return gemv_rows<W, 1>(a, r0, r1);
    case 2:
      return gemv_rows<W, 2>(a, r0, r1);
    case 3:
      return gemv_rows<W, 3>(a, r0, r1);
    case 4:
      return gemv_rows<W, 4>(a, r0, r1);
    case 5:
      return gemv_rows<W, 5>(a, r0, r1);
    case 6:
      return gemv_rows<W, 6>(a, r0, r1);
    case 7:
      return gemv_rows<W, 7>(a, r0, r1);
    default:
      return gemv_rows<W, 8>(a, r0, r1);
  }
}

}  // namespace

extern const GemvFn kNeonGemv[5];
const GemvFn kNeonGemv[5] = {gemv<WeightF32>, gemv<WeightF16>, gemv<WeightBF16>, gemv<WeightQ8>, gemv<WeightQ4>};

}  // namespace tandem::cpu::detail
