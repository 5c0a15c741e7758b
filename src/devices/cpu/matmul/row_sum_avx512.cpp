// AVX-512 weighted row sums, y[i, :] += sum_r p[i, r] * W[r, :] (matmul.h, weighted_row_sum): a
// value cache's rows weighted by attention probabilities.
//
// The sum runs in tiles of kTileRows weight rows and, inside a tile, one 32-column block at a
// time: the M (<= 8) output rows' slices of that block sit in 2 x M accumulators while every row
// of the tile is decoded once and multiplied into all of them. The tile's rows stay in L1 from
// one block to the next, and each output slice is loaded and stored once per tile.
#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/simd_avx512.h"
#include "devices/cpu/matmul/weight_blocks_avx512.h"

namespace tandem::cpu::detail {
namespace {

constexpr int64_t kTileRows = 64;

template <class W, int M>
void row_sum_tile(const RowSumArgs& a, int64_t i0, int64_t r0, int64_t r1) {
  const int64_t blocks = a.w.cols / 32, tail = a.w.cols - blocks * 32;
  const int64_t n_blocks = blocks + (!W::kScaled && tail > 0 ? 1 : 0);  // quantized rows are whole blocks
  const char* base = static_cast<const char*>(a.w.data);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const bool partial = b == blocks;
    const __mmask16 m_lo = partial ? first_lanes(tail) : __mmask16(0xffff);
    const __mmask16 m_hi = partial ? first_lanes(tail - 16) : __mmask16(0xffff);
    __m512 acc[M][2];
    for (int i = 0; i < M; ++i) {
      const float* y = a.y + (i0 + i) * a.ldy + b * 32;
      acc[i][0] = _mm512_maskz_loadu_ps(m_lo, y);
      acc[i][1] = _mm512_maskz_loadu_ps(m_hi, y + 16);
    }
    for (int64_t r = r0; r < r1; ++r) {
      const char* row = base + size_t(r) * a.w.row_bytes;
      __m512 lo, hi;
      if (partial) {
        W::tail(row, b * 32, tail, lo, hi);
      } else {
        W::levels(row, b, lo, hi);
      }
      if constexpr (W::kScaled) {
        const __m512 d = _mm512_set1_ps(W::scale(row, b));
        lo = _mm512_mul_ps(lo, d);
        hi = _mm512_mul_ps(hi, d);
      }
      for (int i = 0; i < M; ++i) {
        const __m512 p = _mm512_set1_ps(a.p[(i0 + i) * a.ldp + r]);
        acc[i][0] = _mm512_fmadd_ps(p, lo, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(p, hi, acc[i][1]);
      }
    }
    for (int i = 0; i < M; ++i) {
      float* y = a.y + (i0 + i) * a.ldy + b * 32;
      _mm512_mask_storeu_ps(y, m_lo, acc[i][0]);
      _mm512_mask_storeu_ps(y + 16, m_hi, acc[i][1]);
    }
  }
}

template <class W>
void row_sum(const RowSumArgs& a) {
  for (int64_t r0 = 0; r0 < a.w.rows; r0 += kTileRows) {
    const int64_t r1 = r0 + kTileRows < a.w.rows ? r0 + kTileRows : a.w.rows;
    int64_t i = 0;
    for (; i + 8 <= a.m; i += 8) row_sum_tile<W, 8>(a, i, r0, r1);
    switch (a.m - i) {
      case 1: row_sum_tile<W, 1>(a, i, r0, r1); break;
      case 2: row_sum_tile<W, 2>(a, i, r0, r1); break;
      case 3: row_sum_tile<W, 3>(a, i, r0, r1); break;
      case 4: row_sum_tile<W, 4>(a, i, r0, r1); break;
      case 5: row_sum_tile<W, 5>(a, i, r0, r1); break;
      case 6: row_sum_tile<W, 6>(a, i, r0, r1); break;
      case 7: row_sum_tile<W, 7>(a, i, r0, r1); break;
      default: break;
    }
  }
}

}  // namespace

// Order: F32, F16, BF16, Q8_0, Q4_0 (weight_type_index).
extern const RowSumFn kAvx512RowSum[5];
const RowSumFn kAvx512RowSum[5] = {row_sum<WeightF32>, row_sum<WeightF16>, row_sum<WeightBF16>, row_sum<WeightQ8>,
                                   row_sum<WeightQ4>};

}  // namespace tandem::cpu::detail
