// NEON weighted row sums, the scheme of row_sum_avx2.cpp with 4-lane vectors: a 32-column block is
// eight float32x4, so with 32 registers three output rows share each decoded block (24
// accumulators). A plain-type row's last partial block is summed element by element.
#include <arm_neon.h>

#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/simd_neon.h"
#include "devices/cpu/matmul/weight_blocks_neon.h"

namespace tandem::cpu::detail {
namespace {

constexpr int64_t kTileRows = 64;

template <class W, int M>
void row_sum_tile(const RowSumArgs& a, int64_t i0, int64_t r0, int64_t r1) {
  const int64_t blocks = a.w.cols / 32;
  const char* base = static_cast<const char*>(a.w.data);
  for (int64_t b = 0; b < blocks; ++b) {
    float32x4_t acc[M][8];
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < 8; ++j) acc[i][j] = vld1q_f32(a.y + (i0 + i) * a.ldy + b * 32 + 4 * j);
    for (int64_t r = r0; r < r1; ++r) {
      const char* row = base + size_t(r) * a.w.row_bytes;
      float32x4_t v[8];
      W::levels(row, b, v);
      if constexpr (W::kScaled) {
        const float d = W::scale(row, b);
        for (int j = 0; j < 8; ++j) v[j] = vmulq_n_f32(v[j], d);
      }
      for (int i = 0; i < M; ++i) {
        const float p = a.p[(i0 + i) * a.ldp + r];
        for (int j = 0; j < 8; ++j) acc[i][j] = vfmaq_n_f32(acc[i][j], v[j], p);
      }
    }
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < 8; ++j) vst1q_f32(a.y + (i0 + i) * a.ldy + b * 32 + 4 * j, acc[i][j]);
  }
  if constexpr (!W::kScaled) {  // the partial last block of a plain-type row
    for (int64_t c = blocks * 32; c < a.w.cols; ++c)
      for (int i = 0; i < M; ++i) {
        float s = a.y[(i0 + i) * a.ldy + c];
        for (int64_t r = r0; r < r1; ++r)
          s += a.p[(i0 + i) * a.ldp + r] * W::tail_value(base + size_t(r) * a.w.row_bytes, c);
        a.y[(i0 + i) * a.ldy + c] = s;
      }
  }
}

template <class W>
void row_sum(const RowSumArgs& a) {
  for (int64_t r0 = 0; r0 < a.w.rows; r0 += kTileRows) {
    const int64_t r1 = r0 + kTileRows < a.w.rows ? r0 + kTileRows : a.w.rows;
    int64_t i = 0;
    for (; i + 3 <= a.m; i += 3) row_sum_tile<W, 3>(a, i, r0, r1);
    if (a.m - i == 2) row_sum_tile<W, 2>(a, i, r0, r1);
    if (a.m - i == 1) row_sum_tile<W, 1>(a, i, r0, r1);
  }
}

}  // namespace

// Order: F32, F16, BF16, Q8_0, Q4_0 (weight_type_index).
const RowSumFn kNeonRowSum[5] = {row_sum<WeightF32>, row_sum<WeightF16>, row_sum<WeightBF16>, row_sum<WeightQ8>,
                                 row_sum<WeightQ4>};

}  // namespace tandem::cpu::detail
