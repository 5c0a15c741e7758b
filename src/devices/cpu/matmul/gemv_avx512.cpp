// AVX-512 decode kernels (m <= 8): matrix-vector products bound by weight bandwidth.
//
// W4A16: the weight blocks are decoded to fp32 in registers next to the FMAs; activations stay
// fp32 (never quantized to int8 as llama.cpp's W4A8 route does), accumulation is fp32. The one
// exception: 16-bit weights at m = 1 read scaled fp16 activations where the view allows them
// (WeightView::half_activations, to_scaled_half).
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

// The activation row as the plain-row kernel reads it: fp32 as given, or scaled fp16.
struct F32Activations {
  const float* p;
  __m512 load(int64_t k) const { return _mm512_loadu_ps(p + k); }
  __m512 load(int64_t k, __mmask16 mask) const { return load_f32(p + k, mask); }
  float unscale() const { return 1.0f; }
};
struct HalfActivations {
  const uint16_t* p;  // zero-padded to whole 32-column blocks
  float inverse_scale;
  __m512 load(int64_t k) const { return load_f16(p + k); }
  __m512 load(int64_t k, __mmask16 mask) const { return load_f16(p + k, mask); }
  float unscale() const { return inverse_scale; }
};

// The activations of an m = 1 product with 16-bit weights as scaled fp16 (the scale's rule:
// half_activation_scale), zero-padded to whole 32-column blocks. An fp32 activation row costs
// two 64-byte loads per 32 weights next to one 64-byte load of weights; the down projection's
// (5632 columns, 22 KB) then shares the L1 with the weight stream, and a 256 MB stream of its rows
// ran at 23 GB/s against 29 with the row in fp16 (Zen 5, 1 thread; 28 -> 30 at 2048 columns).
// Returns false, and the caller keeps fp32, where the rule says so.
bool to_scaled_half(const float* x, int64_t n, uint16_t* out, float& inverse_scale) {
  __m512 amax = _mm512_setzero_ps();
  __mmask16 nan = 0;  // vmaxps drops a NaN in some operand orders: found apart
  for (int64_t k = 0; k < n; k += 16) {
    const __m512 v = load_f32(x + k, first_lanes(n - k));
    amax = _mm512_max_ps(amax, _mm512_abs_ps(v));
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  }
  float scale_value;
  if (!half_activation_scale(_mm512_reduce_max_ps(amax), nan != 0, scale_value, inverse_scale)) return false;
  const __m512 scale = _mm512_set1_ps(scale_value);
  const int64_t padded = (n + 31) / 32 * 32;
  for (int64_t k = 0; k < padded; k += 16) {
    const __m512 v = _mm512_mul_ps(load_f32(x + k, first_lanes(n - k)), scale);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + k), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  return true;
}

// Plain-type weights (F32, F16, BF16) against one activation row. Their rows are contiguous, so
// a chunk of rows walked one after another is one sequential stream that the hardware prefetchers
// follow (interleaving four rows, as gemv_tile does, would split it into four short streams that
// only the software prefetch keeps fed). Two things keep more of the memory's bandwidth in flight
// on Intel, whose L2 streamer stops at every 4 KB page and keeps too few lines in flight for one
// core to fill its share:
// - a software prefetch a page ahead (kPlainPrefetchAhead; into the next rows where a row is
//   shorter): the F16 matmuls of a TinyLlama token went from 6.2-8.9 to 10.1-10.8 GB/s at 1 thread
//   and from 9.1-13.8 to 12.4-18.5 at 2;
// - two such streams per thread, the two halves of its chunk walked side by side
//   (walk_plain_rows): 11.1-12.6 -> 12.9-13.7 GB/s at 1 thread, 21.2-24.0 -> 23.5-26.3 at 2, 4
//   alternating rounds each (matmul_bench BM_TinyLlama/m:1/bf16:2/type:1; Xeon family 6 model
//   207, a VM with 2 vCPUs, 13-14 GB/s read bandwidth at 1 thread and 23-28 at 2).
// On Zen 5 one stream had run 23.7 -> 25.6 GB/s at 1 thread against four rows (the prefetch and
// the pair are not measured there yet).
constexpr int64_t kPlainPrefetchAhead = 4096;

// Past the last row the address is only a hint (a prefetch never faults); it is formed as an
// integer, since a pointer may not be moved past its array.
template <class W>
void prefetch_plain_blocks(const char* row, int64_t b, int64_t n_blocks) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(row) + uintptr_t(b * W::kBlockBytes + kPlainPrefetchAhead);
  for (int64_t line = 0; line < n_blocks * W::kBlockBytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(at + uintptr_t(line)), _MM_HINT_T0);
}

// One row: four accumulators (two blocks, low and high halves) stay clear of the FMA latency.
template <class W, class X>
void gemv_plain_row(const MatmulArgs& a, const X& x, int64_t r) {
  const char* row = static_cast<const char*>(a.w.data) + size_t(r) * a.w.row_bytes;
  const int64_t blocks = a.w.cols / 32;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    prefetch_plain_blocks<W>(row, b, 2);
    __m512 lo0, hi0, lo1, hi1;
    W::levels(row, b, lo0, hi0);
    W::levels(row, b + 1, lo1, hi1);
    acc0 = _mm512_fmadd_ps(lo0, x.load(b * 32), acc0);
    acc1 = _mm512_fmadd_ps(hi0, x.load(b * 32 + 16), acc1);
    acc2 = _mm512_fmadd_ps(lo1, x.load(b * 32 + 32), acc2);
    acc3 = _mm512_fmadd_ps(hi1, x.load(b * 32 + 48), acc3);
  }
  if (b < blocks) {
    __m512 lo, hi;
    W::levels(row, b, lo, hi);
    acc0 = _mm512_fmadd_ps(lo, x.load(b * 32), acc0);
    acc1 = _mm512_fmadd_ps(hi, x.load(b * 32 + 16), acc1);
  }
  const int64_t k0 = blocks * 32, n = a.w.cols - k0;
  if (n > 0) {
    __m512 lo, hi;
    W::tail(row, k0, n, lo, hi);
    acc0 = _mm512_fmadd_ps(lo, x.load(k0, first_lanes(n)), acc0);
    acc1 = _mm512_fmadd_ps(hi, x.load(k0 + 16, first_lanes(n - 16)), acc1);
  }
  a.y[r] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3))) * x.unscale();
}

// Rows ra and rb together, one stream each; every activation load serves both rows, and the four
// accumulators (low and high half of each row's block) stay clear of the FMA latency.
template <class W, class X>
void gemv_plain_row_pair(const MatmulArgs& a, const X& x, int64_t ra, int64_t rb) {
  const char* row_a = static_cast<const char*>(a.w.data) + size_t(ra) * a.w.row_bytes;
  const char* row_b = static_cast<const char*>(a.w.data) + size_t(rb) * a.w.row_bytes;
  const int64_t blocks = a.w.cols / 32;
  __m512 lo_a = _mm512_setzero_ps(), hi_a = lo_a, lo_b = lo_a, hi_b = lo_a;
  for (int64_t b = 0; b < blocks; ++b) {
    prefetch_plain_blocks<W>(row_a, b, 1);
    prefetch_plain_blocks<W>(row_b, b, 1);
    __m512 wla, wha, wlb, whb;
    W::levels(row_a, b, wla, wha);
    W::levels(row_b, b, wlb, whb);
    const __m512 xl = x.load(b * 32), xh = x.load(b * 32 + 16);
    lo_a = _mm512_fmadd_ps(wla, xl, lo_a);
    hi_a = _mm512_fmadd_ps(wha, xh, hi_a);
    lo_b = _mm512_fmadd_ps(wlb, xl, lo_b);
    hi_b = _mm512_fmadd_ps(whb, xh, hi_b);
  }
  const int64_t k0 = blocks * 32, n = a.w.cols - k0;
  if (n > 0) {
    __m512 wla, wha, wlb, whb;
    W::tail(row_a, k0, n, wla, wha);
    W::tail(row_b, k0, n, wlb, whb);
    const __m512 xl = x.load(k0, first_lanes(n)), xh = x.load(k0 + 16, first_lanes(n - 16));
    lo_a = _mm512_fmadd_ps(wla, xl, lo_a);
    hi_a = _mm512_fmadd_ps(wha, xh, hi_a);
    lo_b = _mm512_fmadd_ps(wlb, xl, lo_b);
    hi_b = _mm512_fmadd_ps(whb, xh, hi_b);
  }
  a.y[ra] = _mm512_reduce_add_ps(_mm512_add_ps(lo_a, hi_a)) * x.unscale();
  a.y[rb] = _mm512_reduce_add_ps(_mm512_add_ps(lo_b, hi_b)) * x.unscale();
}

// Rows [r0, r1) as two streams: row i of the first half beside row i of the second; an odd
// count leaves the last row to walk alone.
template <class W, class X>
void walk_plain_rows(const MatmulArgs& a, const X& x, int64_t r0, int64_t r1) {
  const int64_t half = (r1 - r0) / 2;
  for (int64_t i = 0; i < half; ++i) gemv_plain_row_pair<W>(a, x, r0 + i, r0 + half + i);
  if ((r1 - r0) % 2) gemv_plain_row<W>(a, x, r1 - 1);
}

template <class W>
void gemv_plain_rows_f32(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const F32Activations x{a.x};
  walk_plain_rows<W>(a, x, r0, r1);
}

// Rows [r0, r1) of a plain-type weight at m = 1. Where the view allows (half_activations), every
// call converts the activations of 16-bit weights anew (a few hundred instructions against a
// chunk of 32+ rows): the threads' chunks share no state, and the caller's x may have changed
// since the last call at the same address.
template <class W>
void gemv_plain_rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if constexpr (W::kHalfActivations) {
    if (!a.w.half_activations) return gemv_plain_rows_f32<W>(a, r0, r1);
    uint16_t* half = static_cast<uint16_t*>(thread_scratch(kScratchHalfX, size_t((a.w.cols + 31) / 32 * 32) * 2));
    float inverse_scale;
    if (to_scaled_half(a.x, a.w.cols, half, inverse_scale)) {
      const HalfActivations x{half, inverse_scale};
      walk_plain_rows<W>(a, x, r0, r1);
      return;
    }
  }
  gemv_plain_rows_f32<W>(a, r0, r1);
}

template <class W, int M>
void gemv_rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if constexpr (!W::kScaled && M == 1) {
    gemv_plain_rows<W>(a, r0, r1);
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
