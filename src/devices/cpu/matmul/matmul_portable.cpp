// The portable path: plain C++ that runs on any CPU (and is what TANDEM_CPU_PORTABLE=1 selects).
// Same structure as the SIMD paths (rows split over threads for decode; packed activations,
// dequantized weight panels and a register-blocked microkernel for prefill), with loops simple
// enough for the compiler to vectorize with baseline SSE2. W4A16: activations stay fp32.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "core/quant.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu::detail {
namespace {

// Weight row `row`, columns [k0, k0 + n), as fp32. For block types k0 and n are multiples of the
// block size (32, or 256 for the K-quants).
void dequant_range(const WeightView& w, int64_t row, int64_t k0, int64_t n, float* out) {
  const char* base = static_cast<const char*>(w.data) + size_t(row) * w.row_bytes;
  switch (w.type) {
    case DType::F32: std::memcpy(out, reinterpret_cast<const float*>(base) + k0, size_t(n) * sizeof(float)); return;
    case DType::F16: {
      const fp16_t* p = reinterpret_cast<const fp16_t*>(base) + k0;
      for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_f32(p[i]);
      return;
    }
    case DType::BF16: {
      const bf16_t* p = reinterpret_cast<const bf16_t*>(base) + k0;
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return;
    }
    case DType::Q8_0:
      dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(base) + k0 / kQK, out, size_t(n));
      return;
    case DType::Q4_0:
      dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(base) + k0 / kQK, out, size_t(n));
      return;
    default: dequantize_range(w, row, k0, n, out); return;
  }
}

// Decode: per 256-column chunk (a multiple of every block size), dequantize once and dot it with
// every activation row. Eight partial sums per row keep the loop vectorizable (fp addition is not
// reassociated for us).
void gemv(const MatmulArgs& a, int64_t r0, int64_t r1) {
  const int64_t cols = a.w.cols;
  for (int64_t r = r0; r < r1; ++r) {
    float acc[kGemvMaxM][8] = {};
    float wv[256];
    for (int64_t k0 = 0; k0 < cols; k0 += 256) {
      const int64_t n = std::min<int64_t>(256, cols - k0);
      dequant_range(a.w, r, k0, n, wv);
      for (int64_t i = 0; i < a.m; ++i) {
        const float* xi = a.x + i * a.ldx + k0;
        for (int64_t j = 0; j < n; ++j) acc[i][j & 7] += wv[j] * xi[j];
      }
    }
    for (int64_t i = 0; i < a.m; ++i) {
      float s = 0;
      for (float v : acc[i]) s += v;
      a.y[i * a.ldy + r] = s;
    }
  }
}

constexpr int kMR = 4;
constexpr int kNR = 16;

void pack_x(const float* x, int64_t ldx, int rows, int64_t k, int64_t kpad, void* dst) {
  float* out = static_cast<float*>(dst);
  for (int64_t c = 0; c < kpad; ++c)
    for (int i = 0; i < kMR; ++i) out[c * kMR + i] = (i < rows && c < k) ? x[i * ldx + c] : 0.0f;
}

void pack_panel(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float*) {
  float* out = static_cast<float*>(panel);
  float row[256];
  for (int r = 0; r < kNR; ++r) {
    if (r < rows) dequant_range(w, r0 + r, k0, kc, row);
    for (int64_t c = 0; c < kc; ++c) out[c * kNR + r] = r < rows ? row[c] : 0.0f;
  }
}

void micro(int mr_valid, const void* ap, const void* bp, const float*, int64_t kc, float* y, int64_t ldy,
           int nr_valid, bool accumulate) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  float acc[kMR][kNR] = {};
  for (int64_t c = 0; c < kc; ++c)
    for (int i = 0; i < kMR; ++i)
      for (int j = 0; j < kNR; ++j) acc[i][j] += a[c * kMR + i] * b[c * kNR + j];
  for (int i = 0; i < mr_valid; ++i)
    for (int j = 0; j < nr_valid; ++j) y[i * ldy + j] = accumulate ? y[i * ldy + j] + acc[i][j] : acc[i][j];
}

// kc = 256 matches the row buffer in pack_panel; a 16 x 256 fp32 sub-panel is 16 KiB.
constexpr GemmKernels kGemm{kMR, kNR, 256, 64, 1, 4, 4, false, pack_x, pack_panel, micro};

}  // namespace

void row_sum_portable(const RowSumArgs& a) {
  std::vector<float> row(size_t(a.w.cols));
  for (int64_t r = 0; r < a.w.rows; ++r) {
    dequant_range(a.w, r, 0, a.w.cols, row.data());
    for (int64_t i = 0; i < a.m; ++i) {
      const float p = a.p[i * a.ldp + r];
      float* y = a.y + i * a.ldy;
      for (int64_t c = 0; c < a.w.cols; ++c) y[c] += p * row[size_t(c)];
    }
  }
}

const IsaKernels& portable_kernels() {
  static const IsaKernels k{{gemv, gemv, gemv, gemv, gemv}, {kGemm, kGemm, kGemm, kGemm, kGemm}};
  return k;
}

}  // namespace tandem::cpu::detail
