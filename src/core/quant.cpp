#include "core/quant.h"

#include <algorithm>
#include <cmath>

namespace tandem {

void quantize_row_q8_0(const float* x, BlockQ8_0* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) y[b].qs[j] = int8_t(std::roundf(xb[j] * id));
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    // The scale maps the element of largest magnitude, with its sign, to -8.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = xb[j] * id;
      const float x1 = xb[kQK / 2 + j] * id;
      const uint8_t q0 = uint8_t(std::min<int8_t>(15, int8_t(x0 + 8.5f)));
      const uint8_t q1 = uint8_t(std::min<int8_t>(15, int8_t(x1 + 8.5f)));
      y[b].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(x[b].d);
    for (int j = 0; j < kQK; ++j) y[b * kQK + j] = float(x[b].qs[j]) * d;
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(x[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[b * kQK + j] = float(int(x[b].qs[j] & 0x0f) - 8) * d;
      y[b * kQK + kQK / 2 + j] = float(int(x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

}  // namespace tandem
