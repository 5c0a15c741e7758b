// AVX-512 fp32 prefill GEMM (W4A16: weights dequantized to fp32 panels, activations fp32).
//
// Microkernel: 12 activation rows x 32 weight rows. Per column k it loads the panel's 32 weight
// values as two zmm and broadcasts each of the 12 activations, 24 FMAs into 24 accumulator zmm
// (plus 2 weight registers and a broadcast: 27 of 32 registers). 24 independent accumulators cover
// the FMA latency x 2 pipes, and 14 loads per 24 FMAs stay under the 2 loads/cycle the core
// sustains next to 2 FMAs/cycle.
//
// Cache blocking (see run_gemm): kc = 256 columns, nc = 256 weight rows per panel: the fp32
// panel is 256 KiB (L2), one 32-row sub-panel 32 KiB and one activation slice 12 x 256 x 4 =
// 12 KiB, which share the 48 KiB L1 while the slice sweeps the sub-panels.
#include "devices/cpu/matmul/kernels_avx512.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {

extern const GemvFn kAvx512Gemv[5];

namespace {

constexpr int kMR = 12;
constexpr int kNR = 32;

void pack_x(const float* x, int64_t ldx, int rows, int64_t k, int64_t kpad, void* dst) {
  float* out = static_cast<float*>(dst);
  for (int64_t c = 0; c < kpad; ++c)
    for (int i = 0; i < kMR; ++i) out[c * kMR + i] = (i < rows && c < k) ? x[i * ldx + c] : 0.0f;
}

template <int MV>  // valid activation rows (<= kMR); the packed stride stays kMR
void micro_rows(const float* a, const float* b, int64_t kc, float* y, int64_t ldy, int nr_valid, bool accumulate) {
  __m512 c0[MV], c1[MV];
  for (int i = 0; i < MV; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b + k * kNR);
    const __m512 b1 = _mm512_load_ps(b + k * kNR + 16);
    for (int i = 0; i < MV; ++i) {
      const __m512 ai = _mm512_set1_ps(a[k * kMR + i]);
      c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
    }
  }
  const __mmask16 m0 = first_lanes(nr_valid), m1 = first_lanes(nr_valid - 16);
  for (int i = 0; i < MV; ++i) store_row(y + i * ldy, c0[i], c1[i], m0, m1, accumulate);
}

void micro(int mr_valid, const void* ap, const void* bp, const float*, int64_t kc, float* y, int64_t ldy,
           int nr_valid, bool accumulate) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  switch (mr_valid) {
    case 1: return micro_rows<1>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 2: return micro_rows<2>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 3: return micro_rows<3>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 4: return micro_rows<4>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 5: return micro_rows<5>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 6: return micro_rows<6>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 7: return micro_rows<7>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 8: return micro_rows<8>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 9: return micro_rows<9>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 10: return micro_rows<10>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 11: return micro_rows<11>(a, b, kc, y, ldy, nr_valid, accumulate);
    default: return micro_rows<12>(a, b, kc, y, ldy, nr_valid, accumulate);
  }
}

constexpr GemmKernels kGemm{kMR, kNR, 256, 256, 1, 4, 4, false, pack_x, avx512::pack_panel_f32, micro};

}  // namespace

const IsaKernels& avx512_kernels() {
  static const IsaKernels k{{kAvx512Gemv[0], kAvx512Gemv[1], kAvx512Gemv[2], kAvx512Gemv[3], kAvx512Gemv[4]},
                            {kGemm, kGemm, kGemm, kGemm, kGemm}};
  return k;
}

}  // namespace tandem::cpu::detail
