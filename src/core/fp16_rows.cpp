#include "core/fp16_rows.h"

#include <cstring>

#include "core/cpu_features.h"
#include "core/half.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace tandem {

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

#if defined(__aarch64__)
// fcvt / fcvtn in the aarch64 baseline: four values a conversion.
bool fp16_rows_simd_available() { return true; }
void widen_fp16_row_simd(const uint8_t* src, float* dst, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(src + 2 * i))));
  widen_fp16_row_portable(src + 2 * i, dst + i, n - i);
}
void narrow_fp16_row_simd(const float* src, uint8_t* dst, int n, bool accumulate) {
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    float32x4_t v = vld1q_f32(src + i);
    if (accumulate) v = vaddq_f32(v, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(dst + 2 * i))));
    vst1_u8(dst + 2 * i, vreinterpret_u8_f16(vcvt_f16_f32(v)));
  }
  narrow_fp16_row_portable(src + i, dst + 2 * i, n - i, accumulate);
}
#elif defined(TANDEM_CORE_F16C)
bool fp16_rows_simd_available() { return cpu_features().avx2 && cpu_features().f16c; }  // fp16_rows_f16c.cpp
#else
bool fp16_rows_simd_available() { return false; }
void widen_fp16_row_simd(const uint8_t* src, float* dst, int n) { widen_fp16_row_portable(src, dst, n); }
void narrow_fp16_row_simd(const float* src, uint8_t* dst, int n, bool accumulate) {
  narrow_fp16_row_portable(src, dst, n, accumulate);
}
#endif

namespace {
const bool kSimd = fp16_rows_simd_available();
}  // namespace

void widen_fp16_row(const uint8_t* src, float* dst, int n) {
  if (kSimd) {
    widen_fp16_row_simd(src, dst, n);
  } else {
    widen_fp16_row_portable(src, dst, n);
  }
}

void narrow_fp16_row(const float* src, uint8_t* dst, int n, bool accumulate) {
  if (kSimd) {
    narrow_fp16_row_simd(src, dst, n, accumulate);
  } else {
    narrow_fp16_row_portable(src, dst, n, accumulate);
  }
}

}  // namespace tandem
