// AVX2 + FMA + F16C decode kernels (m <= 8), the same scheme as gemv_avx512.cpp with 8-lane
// vectors: several weight rows per pass share each activation load, each decoded block is shared
// by all activations, fp32 activations and accumulators (W4A16, no int8 activations). With 16
// ymm registers the rows per pass shrink as activations grow: 4 rows for m = 1, 2 for m <= 3,
// 1 beyond (activations are then read from L1 as FMA memory operands). Plain-type rows are
// prefetched a tile ahead (gemv_tile).
#include <immintrin.h>

#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/simd_avx2.h"
#include "devices/cpu/matmul/weight_blocks_avx2.h"

namespace tandem::cpu::detail {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <class W, int R, int M>
void gemv_tile(const MatmulArgs& a, int64_t r) {
  const char* rows[R];
  for (int rr = 0; rr < R; ++rr) rows[rr] = static_cast<const char*>(a.w.data) + size_t(r + rr) * a.w.row_bytes;
  const int64_t blocks = a.w.cols / 32;
  __m256 acc[R][M];
  for (int rr = 0; rr < R; ++rr)
    for (int i = 0; i < M; ++i) acc[rr][i] = _mm256_setzero_ps();

  for (int64_t b = 0; b < blocks; ++b) {
    if constexpr (!W::kScaled) {
      // Each row's stream is prefetched where the next tile will read it: R rows further on, at
      // the same column. Intel's L2 streamer stops at every 4 KB page, and a TinyLlama F16 row is
      // one page. TinyLlama tg64 (TANDEM_CPU_ISA=avx2, Xeon family 6 model 207, alternating
      // rounds): F16 2 threads 8.9-9.2 -> 10.9-12.7 tok/s (4 KB ahead in the same row: 9.6-10.0),
      // 1 thread 4.7-4.9 -> 5.7-5.8; BF16 2 threads 8.8 -> 10.4-11.0.
      // Past the last row the address is only a hint (a prefetch never faults), formed as an
      // integer since a pointer may not be moved past its array.
      for (int rr = 0; rr < R; ++rr) {
        const uintptr_t at =
            reinterpret_cast<uintptr_t>(rows[rr]) + uintptr_t(b * W::kBlockBytes) + uintptr_t(R * a.w.row_bytes);
        for (int64_t line = 0; line < W::kBlockBytes; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(at + uintptr_t(line)), _MM_HINT_T0);
      }
    }
    for (int rr = 0; rr < R; ++rr) {
      __m256 v[4];
      W::levels(rows[rr], b, v);
      if constexpr (W::kScaled) {
        const __m256 d = _mm256_set1_ps(W::scale(rows[rr], b));
        if constexpr (M == 1) {
          const float* x = a.x + b * 32;
          __m256 t = _mm256_mul_ps(v[0], _mm256_loadu_ps(x));
          for (int j = 1; j < 4; ++j) t = _mm256_fmadd_ps(v[j], _mm256_loadu_ps(x + 8 * j), t);
          acc[rr][0] = _mm256_fmadd_ps(t, d, acc[rr][0]);
          continue;
        }
        for (int j = 0; j < 4; ++j) v[j] = _mm256_mul_ps(v[j], d);
      }
      for (int i = 0; i < M; ++i) {
        const float* x = a.x + i * a.ldx + b * 32;
        for (int j = 0; j < 4; ++j) acc[rr][i] = _mm256_fmadd_ps(v[j], _mm256_loadu_ps(x + 8 * j), acc[rr][i]);
      }
    }
  }
  for (int i = 0; i < M; ++i) {
    for (int rr = 0; rr < R; ++rr) {
      float s = hsum(acc[rr][i]);
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

extern const GemvFn kAvx2Gemv[5];
const GemvFn kAvx2Gemv[5] = {gemv<WeightF32>, gemv<WeightF16>, gemv<WeightBF16>, gemv<WeightQ8>, gemv<WeightQ4>};

}  // namespace tandem::cpu::detail
