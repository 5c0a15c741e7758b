// NEON fp32 prefill GEMM (W4A16: weights dequantized to fp32 panels, activations fp32).
//
// Microkernel: 8 activation rows x 12 weight rows = 24 float32x4 accumulators + 3 weight
// registers + 2 activation registers of AArch64's 32; each k step is 5 loads for 24 FMAs, the
// activation taken by lane (fmla by element). Cache blocking as the x86 GEMMs: kc = 256 columns,
// nc = 120 weight rows (a 120 KiB fp32 panel for the core's L2, a 12 KiB sub-panel and an 8 KiB
// activation slice for L1).
#include <arm_neon.h>

#include <cstring>
#include <utility>

#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/simd_neon.h"

namespace tandem::cpu::detail {

extern const GemvFn kNeonGemv[5];

namespace {

constexpr int kMR = 8;
constexpr int kNR = 12;
constexpr int kMaxKc = 256;

void pack_x(const float* x, int64_t ldx, int rows, int64_t k, int64_t kpad, void* dst) {
  float* out = static_cast<float*>(dst);
  for (int64_t c = 0; c < kpad; ++c)
    for (int i = 0; i < kMR; ++i) out[c * kMR + i] = (i < rows && c < k) ? x[i * ldx + c] : 0.0f;
}

// Row columns [k0, k0 + n) as fp32 (block types: k0 and n multiples of 32).
void dequant_row(const WeightView& w, int64_t row, int64_t k0, int64_t n, float* out) {
  if (weight_type_index(w.type) < 0) return dequantize_range(w, row, k0, n, out);  // core's, scalar
  const char* base = static_cast<const char*>(w.data) + size_t(row) * w.row_bytes;
  if (w.type == DType::Q4_0 || w.type == DType::Q8_0) {
    for (int64_t b = 0; b < n / 32; ++b) {
      float32x4_t v[8];
      float d;
      if (w.type == DType::Q4_0) {
        const BlockQ4_0* blk = reinterpret_cast<const BlockQ4_0*>(base) + k0 / 32 + b;
        q4_levels(blk, v);
        d = fp16_scale(blk->d);
      } else {
        const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(base) + k0 / 32 + b;
        q8_levels(blk, v);
        d = fp16_scale(blk->d);
      }
      for (int j = 0; j < 8; ++j) vst1q_f32(out + b * 32 + 4 * j, vmulq_n_f32(v[j], d));
    }
    return;
  }
  const int64_t vec_end = n / 4 * 4;
  for (int64_t j = 0; j < vec_end; j += 4) {
    float32x4_t v;
    if (w.type == DType::F32)
      v = vld1q_f32(reinterpret_cast<const float*>(base) + k0 + j);
    else if (w.type == DType::F16)
      v = load4_f16(reinterpret_cast<const uint16_t*>(base) + k0 + j);
    else
      v = load4_bf16(reinterpret_cast<const uint16_t*>(base) + k0 + j);
    vst1q_f32(out + j, v);
  }
  for (int64_t j = vec_end; j < n; ++j) {
    const int64_t k = k0 + j;
    // memcpy: a row of a mapped file need not be aligned to its element type.
    if (w.type == DType::F32) {
      std::memcpy(&out[j], base + size_t(k) * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, base + size_t(k) * 2, 2);
      out[j] = w.type == DType::F16 ? fp16_scale(h) : bf16_value(h);
    }
  }
}

void pack_panel(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float*) {
  alignas(16) float staged[kNR][kMaxKc];
  float* out = static_cast<float*>(panel);
  for (int r = 0; r < kNR; ++r) {
    if (r < rows)
      dequant_row(w, r0 + r, k0, kc, staged[r]);
    else
      for (int64_t c = 0; c < kc; ++c) staged[r][c] = 0.0f;
  }
  for (int64_t c = 0; c < kc; ++c)
    for (int r = 0; r < kNR; ++r) out[c * kNR + r] = staged[r][c];
}

// One activation row's 12 products at step k: the activation is lane I % 4 of a_lo or a_hi, a
// register operand of fmla (by element), so no broadcast instruction is spent on it.
template <int I>
inline void fma_row(float32x4_t (&c)[3], float32x4_t b0, float32x4_t b1, float32x4_t b2, float32x4_t a_lo,
                    float32x4_t a_hi) {
  const float32x4_t src = I < 4 ? a_lo : a_hi;
  c[0] = vfmaq_laneq_f32(c[0], b0, src, I & 3);
  c[1] = vfmaq_laneq_f32(c[1], b1, src, I & 3);
  c[2] = vfmaq_laneq_f32(c[2], b2, src, I & 3);
}

template <int MV>
void micro_rows(const float* a, const float* b, int64_t kc, float* y, int64_t ldy, int nr_valid, bool accumulate) {
  float32x4_t c[MV][3];
  for (int i = 0; i < MV; ++i) c[i][0] = c[i][1] = c[i][2] = vdupq_n_f32(0.0f);
  for (int64_t k = 0; k < kc; ++k) {
    const float32x4_t b0 = vld1q_f32(b + k * kNR), b1 = vld1q_f32(b + k * kNR + 4), b2 = vld1q_f32(b + k * kNR + 8);
    const float32x4_t a_lo = vld1q_f32(a + k * kMR), a_hi = vld1q_f32(a + k * kMR + 4);
    [&]<int... I>(std::integer_sequence<int, I...>) { (fma_row<I>(c[I], b0, b1, b2, a_lo, a_hi), ...); }
    (std::make_integer_sequence<int, MV>{});
  }
  for (int i = 0; i < MV; ++i) {
    float* yi = y + i * ldy;
    if (nr_valid == kNR) {
      for (int j = 0; j < 3; ++j) {
        float32x4_t v = c[i][j];
        if (accumulate) v = vaddq_f32(v, vld1q_f32(yi + 4 * j));
        vst1q_f32(yi + 4 * j, v);
      }
      continue;
    }
    alignas(16) float row[kNR];
    for (int j = 0; j < 3; ++j) vst1q_f32(row + 4 * j, c[i][j]);
    for (int j = 0; j < nr_valid; ++j) yi[j] = accumulate ? yi[j] + row[j] : row[j];
  }
}

void micro(int mr_valid, const void* ap, const void* bp, const float*, int64_t kc, float* y, int64_t ldy, int nr_valid,
           bool accumulate) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  switch (mr_valid) {
    case 1:
      return micro_rows<1>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 2:
      return micro_rows<2>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 3:
      return micro_rows<3>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 4:
      return micro_rows<4>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 5:
      return micro_rows<5>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 6:
      return micro_rows<6>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 7:
      return micro_rows<7>(a, b, kc, y, ldy, nr_valid, accumulate);
    default:
      return micro_rows<8>(a, b, kc, y, ldy, nr_valid, accumulate);
  }
}

constexpr GemmKernels kGemm{kMR, kNR, kMaxKc, 120, 1, 4, 4, false, pack_x, pack_panel, micro};

}  // namespace

const IsaKernels& neon_kernels() {
  static const IsaKernels k{{kNeonGemv[0], kNeonGemv[1], kNeonGemv[2], kNeonGemv[3], kNeonGemv[4]},
                            {kGemm, kGemm, kGemm, kGemm, kGemm}};
  return k;
}

}  // namespace tandem::cpu::detail
