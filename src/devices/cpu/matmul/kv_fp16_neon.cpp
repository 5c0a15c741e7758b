// fp16 arithmetic for attention over an f16 KV cache (kv_products.h), built with
// -march=armv8.2-a+fp16 and run only where the hwcaps say asimdhp. Scores: register tiles of 4
// query rows x 3 key rows of fp16 accumulators, 8 fp16 FMAs per lane per 64-column run, each run
// widened into fp32. Value sums: 2 probability rows x 32 columns (one 64-byte line of a cache row),
// fp16 accumulators over 8-row runs (the probability taken from a vector lane), widened into fp32
// accumulators that stay in registers for the whole cache. bench/kernel-instructions.sh counts
// the instructions both spend against the fp32 kernels.
#include <arm_neon.h>

#include "devices/cpu/matmul/kv_products.h"

namespace tandem::cpu::detail {
namespace {

constexpr int64_t kRunCols = 64;  // scores: columns summed in fp16 before widening
constexpr int64_t kRunRows = 8;   // sums: cache rows summed in fp16 before widening

const float16_t* as_fp16(const uint16_t* p) { return reinterpret_cast<const float16_t*>(p); }

// cols values of a, times scale, rounded to fp16 (cols % 8 == 0).
void round_row(const float* a, float scale, int64_t cols, float16_t* out) {
  for (int64_t c = 0; c < cols; c += 8) {
    const float16x4_t lo = vcvt_f16_f32(vmulq_n_f32(vld1q_f32(a + c), scale));
    const float16x4_t hi = vcvt_f16_f32(vmulq_n_f32(vld1q_f32(a + c + 4), scale));
    vst1q_f16(out + c, vcombine_f16(lo, hi));
  }
}

// The fp32 recomputations of a run whose fp16 sum overflowed.
float key_dot_fp32(const float16_t* k, const float* q, int64_t cols) {
  float s = 0;
  for (int64_t c = 0; c < cols; ++c) s += float(k[c]) * q[c];
  return s;
}

// Scores of query rows i0.. (MR) against key rows r0.. (NR): a register tile of MR x NR fp16
// accumulators, each loaded query and key vector used NR and MR times.
template <int MR, int NR>
void scores_tile(const KvFp16Args& a, const float16_t* qh, int64_t i0, int64_t r0) {
  const float16_t* k[NR];
  for (int j = 0; j < NR; ++j) k[j] = as_fp16(a.kv) + (r0 + j) * a.row_stride;
  const float16_t* q[MR];
  for (int i = 0; i < MR; ++i) q[i] = qh + (i0 + i) * a.cols;
  float32x4_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  for (int64_t c0 = 0; c0 < a.cols; c0 += kRunCols) {
    const int64_t c1 = c0 + kRunCols < a.cols ? c0 + kRunCols : a.cols;
    float16x8_t h[MR][NR];
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) h[i][j] = vdupq_n_f16(0);
    for (int64_t c = c0; c < c1; c += 8) {
      float16x8_t kv[NR];
      for (int j = 0; j < NR; ++j) kv[j] = vld1q_f16(k[j] + c);
      for (int i = 0; i < MR; ++i) {
        const float16x8_t qv = vld1q_f16(q[i] + c);
        for (int j = 0; j < NR; ++j) h[i][j] = vfmaq_f16(h[i][j], qv, kv[j]);
      }
    }
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        acc[i][j] = vaddq_f32(acc[i][j], vaddq_f32(vcvt_f32_f16(vget_low_f16(h[i][j])), vcvt_high_f32_f16(h[i][j])));
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      float s = vaddvq_f32(acc[i][j]) / a.scale[i0 + i];  // a power of two: exact
      if (!__builtin_isfinite(s)) s = key_dot_fp32(k[j], a.a + (i0 + i) * a.lda, a.cols);
      a.y[(i0 + i) * a.ldy + r0 + j] = s;
    }
}

template <int NR>
void scores_rows(const KvFp16Args& a, const float16_t* qh, int64_t r0) {
  int64_t i0 = 0;
  for (; i0 + 4 <= a.m; i0 += 4) scores_tile<4, NR>(a, qh, i0, r0);
  switch (a.m - i0) {
    case 1:
      scores_tile<1, NR>(a, qh, i0, r0);
      break;
    case 2:
      scores_tile<2, NR>(a, qh, i0, r0);
      break;
    case 3:
      scores_tile<3, NR>(a, qh, i0, r0);
      break;
    default:
      break;
  }
}

// Keys are walked once (3 rows at a time); every query tile uses them from L1.
void scores(const KvFp16Args& a) {
  float16_t qh[kKvFp16MaxQueryRows * kKvFp16MaxCols];
  for (int64_t i = 0; i < a.m; ++i) round_row(a.a + i * a.lda, a.scale[i], a.cols, qh + i * a.cols);
  int64_t r0 = 0;
  for (; r0 + 3 <= a.rows; r0 += 3) scores_rows<3>(a, qh, r0);
  if (a.rows - r0 == 2) scores_rows<2>(a, qh, r0);
  if (a.rows - r0 == 1) scores_rows<1>(a, qh, r0);
}

// One cache row t of a full 8-row run: h[i][j] += p[i, t] * V[t, 8j..8j+7], p[i, t] lane T of pv[i].
template <int M, int NV, int T>
inline void sums_step(float16x8_t (&h)[M][NV], const float16_t* v, const float16x8_t (&pv)[M]) {
  float16x8_t vv[NV];
  for (int j = 0; j < NV; ++j) vv[j] = vld1q_f16(v + 8 * j);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < NV; ++j) h[i][j] = vfmaq_laneq_f16(h[i][j], vv[j], pv[i], T);
}

// y rows i0.. (M of them), columns c0 .. c0 + 8 NV: += sum_r p[i, r] V[r, c]. fp32 accumulators
// stay in registers for the whole cache; each 8-row run adds its widened fp16 sums into them.
template <int M, int NV>
void sums_tile(const KvFp16Args& a, int64_t i0, int64_t c0) {
  float32x4_t acc[M][NV][2];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j][0] = acc[i][j][1] = vdupq_n_f32(0.0f);
  const float16_t* base = as_fp16(a.kv) + c0;
  for (int64_t r0 = 0; r0 < a.rows; r0 += kRunRows) {
    const int64_t n = a.rows - r0 < kRunRows ? a.rows - r0 : kRunRows;
    // The run's probabilities, scaled and rounded (zeros past the last row).
    float16_t ph[M][kRunRows];
    float16x8_t pv[M];
    for (int i = 0; i < M; ++i) {
      const float* p = a.a + (i0 + i) * a.lda + r0;
      if (n == kRunRows) {
        round_row(p, a.scale[i0 + i], kRunRows, ph[i]);
      } else {
        float t[kRunRows] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t j = 0; j < n; ++j) t[j] = p[j];
        round_row(t, a.scale[i0 + i], kRunRows, ph[i]);
      }
      pv[i] = vld1q_f16(ph[i]);
    }
    float16x8_t h[M][NV];
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < NV; ++j) h[i][j] = vdupq_n_f16(0);
    const float16_t* v = base + r0 * a.row_stride;
    if (n == kRunRows) {
      sums_step<M, NV, 0>(h, v, pv);
      sums_step<M, NV, 1>(h, v + a.row_stride, pv);
      sums_step<M, NV, 2>(h, v + 2 * a.row_stride, pv);
      sums_step<M, NV, 3>(h, v + 3 * a.row_stride, pv);
      sums_step<M, NV, 4>(h, v + 4 * a.row_stride, pv);
      sums_step<M, NV, 5>(h, v + 5 * a.row_stride, pv);
      sums_step<M, NV, 6>(h, v + 6 * a.row_stride, pv);
      sums_step<M, NV, 7>(h, v + 7 * a.row_stride, pv);
    } else {  // the last, partial run: lanes past n hold zeros, rows past n are not read
      for (int64_t t = 0; t < n; ++t)
        for (int j = 0; j < NV; ++j) {
          const float16x8_t vv = vld1q_f16(v + t * a.row_stride + 8 * j);
          for (int i = 0; i < M; ++i) h[i][j] = vfmaq_n_f16(h[i][j], vv, ph[i][t]);
        }
    }
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < NV; ++j) {
        acc[i][j][0] = vaddq_f32(acc[i][j][0], vcvt_f32_f16(vget_low_f16(h[i][j])));
        acc[i][j][1] = vaddq_f32(acc[i][j][1], vcvt_high_f32_f16(h[i][j]));
      }
  }
  // A run whose fp16 sum overflowed (or a NaN) left a non-finite accumulator: the tile is redone in
  // fp32 from the unrounded operands.
  float32x4_t mx = vdupq_n_f32(0.0f);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < NV; ++j) mx = vmaxq_f32(mx, vmaxq_f32(vabsq_f32(acc[i][j][0]), vabsq_f32(acc[i][j][1])));
  if (!(vmaxvq_f32(mx) < __builtin_inff())) {
    for (int i = 0; i < M; ++i)
      for (int64_t c = 0; c < 8 * NV; ++c) {
        float s = 0;
        for (int64_t r = 0; r < a.rows; ++r) s += a.a[(i0 + i) * a.lda + r] * float(base[r * a.row_stride + c]);
        a.y[(i0 + i) * a.ldy + c0 + c] += s;
      }
    return;
  }
  for (int i = 0; i < M; ++i) {
    const float inv = 1.0f / a.scale[i0 + i];
    for (int j = 0; j < NV; ++j) {
      float* y = a.y + (i0 + i) * a.ldy + c0 + 8 * j;
      vst1q_f32(y, vfmaq_n_f32(vld1q_f32(y), acc[i][j][0], inv));
      vst1q_f32(y + 4, vfmaq_n_f32(vld1q_f32(y + 4), acc[i][j][1], inv));
    }
  }
}

template <int M>
void sums_rows(const KvFp16Args& a, int64_t i0) {
  int64_t c0 = 0;
  for (; c0 + 32 <= a.cols; c0 += 32) sums_tile<M, 4>(a, i0, c0);
  switch ((a.cols - c0) / 8) {
    case 1:
      sums_tile<M, 1>(a, i0, c0);
      break;
    case 2:
      sums_tile<M, 2>(a, i0, c0);
      break;
    case 3:
      sums_tile<M, 3>(a, i0, c0);
      break;
    default:
      break;
  }
}

void sums(const KvFp16Args& a) {
  int64_t i0 = 0;
  for (; i0 + 2 <= a.m; i0 += 2) sums_rows<2>(a, i0);
  if (a.m - i0 == 1) sums_rows<1>(a, i0);
}

}  // namespace

extern const KvFp16Kernels kNeonFp16Kv;
const KvFp16Kernels kNeonFp16Kv{scores, sums};

}  // namespace tandem::cpu::detail
