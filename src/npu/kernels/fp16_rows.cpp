#include "npu/kernels/fp16_rows.h"

#include <cstring>

#include "core/cpu_features.h"
#include "core/half.h"

namespace tandem::npu::kernels {

void widen_fp16_row_portable(const uint8_t* src, float* dst, int n) {
  for (int i = 0; i < n; ++i) {
    fp16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    // A signaling NaN comes out quiet, as from the hardware conversion (IEEE 754 6.2).
    if ((h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0) h = fp16_t(h | 0x0200);
    dst[i] = fp16_to_f32(h);
  }
}

void narrow_fp16_row_portable(const float* src, uint8_t* dst, int n, bool accumulate) {
  for (int i = 0; i < n; ++i) {
    float v = src[i];
    if (accumulate) {
      fp16_t old;
      std::memcpy(&old, dst + 2 * i, 2);
      v += fp16_to_f32(old);
    }
    const fp16_t h = f32_to_fp16(v);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

#if defined(TANDEM_NPU_PORTABLE_KERNELS)
bool fp16_rows_f16c_available() { return false; }
void widen_fp16_row_f16c(const uint8_t* src, float* dst, int n) { widen_fp16_row_portable(src, dst, n); }
void narrow_fp16_row_f16c(const float* src, uint8_t* dst, int n, bool accumulate) {
  narrow_fp16_row_portable(src, dst, n, accumulate);
}
#else
bool fp16_rows_f16c_available() { return cpu_features().avx2 && cpu_features().f16c; }
#endif

namespace {
const bool kF16c = fp16_rows_f16c_available();
}  // namespace

void widen_fp16_row(const uint8_t* src, float* dst, int n) {
  if (kF16c) {
    widen_fp16_row_f16c(src, dst, n);
  } else {
    widen_fp16_row_portable(src, dst, n);
  }
}

void narrow_fp16_row(const float* src, uint8_t* dst, int n, bool accumulate) {
  if (kF16c) {
    narrow_fp16_row_f16c(src, dst, n, accumulate);
  } else {
    narrow_fp16_row_portable(src, dst, n, accumulate);
  }
}

}  // namespace tandem::npu::kernels
