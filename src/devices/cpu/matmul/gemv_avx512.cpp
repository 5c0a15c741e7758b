// AVX-512 decode kernels (m <= 8): matrix-vector products bound by weight bandwidth.
//
// W4A16: the weight blocks are decoded to fp32 in registers next to the FMAs; activations stay
// fp32 (never quantized to int8 as llama.cpp's W4A8 route does), accumulation is fp32.
//
// Each pass streams R weight rows together and multiplies them with all M activation rows, so an
// activation load is shared by R rows and a decoded weight block by M activations. R x M
// accumulators (one zmm per pair, both 16-column halves of a block summed into it) must fit the
// 32 registers next to the decoded blocks: R = 4 for M <= 4 and R = 2 for M <= 8.
#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/simd_avx512.h"
#include "devices/cpu/matmul/weight_blocks_avx512.h"

namespace tandem::cpu::detail {
namespace {

template <class W, int R, int M>
void gemv_tile(const MatmulArgs& a, int64_t r) {
  const char* rows[R];
  for (int rr = 0; rr < R; ++rr) rows[rr] = static_cast<const char*>(a.w.data) + size_t(r + rr) * a.w.row_bytes;
  // Software prefetch of the next pass's rows, at the same column as this pass: a lookahead of
  // R rows (~4.6 KB for Q4_0 x 2048 columns), far enough to cover DRAM latency at full rate.
  // Rows are short (a few KB), so the hardware stream prefetchers would retrain on every pass.
  const int64_t prefetch_ahead = int64_t(a.w.row_bytes) * R;
  const float* x = a.x;
  const int64_t ldx = a.ldx;
  const int64_t blocks = a.w.cols / 32;

  __m512 acc[R][M];
  for (int rr = 0; rr < R; ++rr)
    for (int i = 0; i < M; ++i) acc[rr][i] = _mm512_setzero_ps();

  for (int64_t b = 0; b < blocks; ++b) {
    __m512 xl[M], xh[M];
    for (int i = 0; i < M; ++i) {
      xl[i] = _mm512_loadu_ps(x + i * ldx + b * 32);
      xh[i] = _mm512_loadu_ps(x + i * ldx + b * 32 + 16);
    }
    for (int rr = 0; rr < R; ++rr) {
      _mm_prefetch(rows[rr] + b * W::kBlockBytes + prefetch_ahead, _MM_HINT_T0);
      __m512 lo, hi;
      W::levels(rows[rr], b, lo, hi);
      if constexpr (!W::kScaled) {
        for (int i = 0; i < M; ++i) {
          acc[rr][i] = _mm512_fmadd_ps(lo, xl[i], acc[rr][i]);
          acc[rr][i] = _mm512_fmadd_ps(hi, xh[i], acc[rr][i]);
        }
      } else if constexpr (M == 1) {
        // One activation: sum the block in unscaled levels, then scale once.
        const __m512 t = _mm512_fmadd_ps(hi, xh[0], _mm512_mul_ps(lo, xl[0]));
        acc[rr][0] = _mm512_fmadd_ps(t, _mm512_set1_ps(W::scale(rows[rr], b)), acc[rr][0]);
      } else {
        // Several activations: scale the decoded block once and share it.
        const __m512 d = _mm512_set1_ps(W::scale(rows[rr], b));
        lo = _mm512_mul_ps(lo, d);
        hi = _mm512_mul_ps(hi, d);
        for (int i = 0; i < M; ++i) {
          acc[rr][i] = _mm512_fmadd_ps(lo, xl[i], acc[rr][i]);
          acc[rr][i] = _mm512_fmadd_ps(hi, xh[i], acc[rr][i]);
        }
      }
    }
  }
  if constexpr (!W::kScaled) {
    const int64_t k0 = blocks * 32, n = a.w.cols - k0;
    if (n > 0) {
      for (int i = 0; i < M; ++i) {
        const __m512 xl = load_f32(x + i * ldx + k0, first_lanes(n));
        const __m512 xh = load_f32(x + i * ldx + k0 + 16, first_lanes(n - 16));
        for (int rr = 0; rr < R; ++rr) {
          __m512 lo, hi;
          W::tail(rows[rr], k0, n, lo, hi);
          acc[rr][i] = _mm512_fmadd_ps(lo, xl, acc[rr][i]);
          acc[rr][i] = _mm512_fmadd_ps(hi, xh, acc[rr][i]);
        }
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int rr = 0; rr < R; ++rr) a.y[i * a.ldy + r + rr] = _mm512_reduce_add_ps(acc[rr][i]);
}

// One row of a plain-type weight (F32, F16, BF16) against one activation row. Its rows are
// contiguous, so walking them one after another is a single sequential stream that the hardware
// prefetchers follow across rows and pages; interleaving four rows (gemv_tile) splits it into
// four short streams that only the software prefetch keeps fed. Nothing is decoded per block
// beyond a widening, so the loop keeps four accumulators (two blocks, low and high halves) to
// stay clear of the FMA latency. On Zen 5 the F16 matmuls of a TinyLlama token ran 23.7 -> 25.6
// GB/s at 1 thread and 43.5 -> 45.9 at 2 (medians of 5-7 alternating runs, matmul_bench).
template <class W>
void gemv_plain_row(const MatmulArgs& a, int64_t r) {
  const char* row = static_cast<const char*>(a.w.data) + size_t(r) * a.w.row_bytes;
  const float* x = a.x;
  const int64_t blocks = a.w.cols / 32;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    __m512 lo0, hi0, lo1, hi1;
    W::levels(row, b, lo0, hi0);
    W::levels(row, b + 1, lo1, hi1);
    acc0 = _mm512_fmadd_ps(lo0, _mm512_loadu_ps(x + b * 32), acc0);
    acc1 = _mm512_fmadd_ps(hi0, _mm512_loadu_ps(x + b * 32 + 16), acc1);
    acc2 = _mm512_fmadd_ps(lo1, _mm512_loadu_ps(x + b * 32 + 32), acc2);
    acc3 = _mm512_fmadd_ps(hi1, _mm512_loadu_ps(x + b * 32 + 48), acc3);
  }
  if (b < blocks) {
    __m512 lo, hi;
    W::levels(row, b, lo, hi);
    acc0 = _mm512_fmadd_ps(lo, _mm512_loadu_ps(x + b * 32), acc0);
    acc1 = _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + b * 32 + 16), acc1);
  }
  const int64_t k0 = blocks * 32, n = a.w.cols - k0;
  if (n > 0) {
    __m512 lo, hi;
    W::tail(row, k0, n, lo, hi);
    acc0 = _mm512_fmadd_ps(lo, load_f32(x + k0, first_lanes(n)), acc0);
    acc1 = _mm512_fmadd_ps(hi, load_f32(x + k0 + 16, first_lanes(n - 16)), acc1);
  }
  a.y[r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

template <class W, int M>
void gemv_rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if constexpr (!W::kScaled && M == 1) {
    for (int64_t r = r0; r < r1; ++r) gemv_plain_row<W>(a, r);
  } else {
    constexpr int R = M <= 4 ? 4 : 2;
    int64_t r = r0;
    for (; r + R <= r1; r += R) gemv_tile<W, R, M>(a, r);
    for (; r < r1; ++r) gemv_tile<W, 1, M>(a, r);
  }
}

template <class W>
void gemv(const MatmulArgs& a, int64_t r0, int64_t r1) {
  switch (a.m) {
    case 1: return gemv_rows<W, 1>(a, r0, r1);
    case 2: return gemv_rows<W, 2>(a, r0, r1);
    case 3: return gemv_rows<W, 3>(a, r0, r1);
    case 4: return gemv_rows<W, 4>(a, r0, r1);
    case 5: return gemv_rows<W, 5>(a, r0, r1);
    case 6: return gemv_rows<W, 6>(a, r0, r1);
    case 7: return gemv_rows<W, 7>(a, r0, r1);
    default: return gemv_rows<W, 8>(a, r0, r1);
  }
}

}  // namespace

// Referenced by gemm_avx512.cpp's table (order: F32, F16, BF16, Q8_0, Q4_0).
extern const GemvFn kAvx512Gemv[5];
const GemvFn kAvx512Gemv[5] = {gemv<WeightF32>, gemv<WeightF16>, gemv<WeightBF16>, gemv<WeightQ8>, gemv<WeightQ4>};

}  // namespace tandem::cpu::detail
