// Q4_1, Q5_0 and Q5_1: ggml's reference quantizers (quantize_row_q4_1_ref and friends, which is
// what quantize_q4_1 etc. run without an importance matrix) and its dequantizers.
//
// Bit-exactness rests on doing the same float operations in the same order as ggml: the scale is
// computed in float and only then rounded to fp16, and the quants come from that unrounded float
// scale (not from the fp16 one), truncated toward zero after adding 0.5 (or 16.5), as ggml's C
// casts do. This file is compiled with -ffp-contract=off so no a*b+c becomes a fused multiply-add.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/quant.h"

namespace tandem {
namespace {

// The fifth bits of a Q5 block live in a 32-bit little-endian word, bit j for element j; GGUF
// stores it as four bytes. Writing the bytes explicitly keeps the layout independent of the host's
// byte order.
void store_fifth_bits(uint32_t qh, uint8_t (&out)[4]) {
  for (int k = 0; k < 4; ++k) out[k] = uint8_t(qh >> (8 * k));
}

uint32_t load_fifth_bits(const uint8_t (&in)[4]) {
  return uint32_t(in[0]) | uint32_t(in[1]) << 8 | uint32_t(in[2]) << 16 | uint32_t(in[3]) << 24;
}

// The smallest and largest element of a block, scanned in order as ggml does (the initial values
// matter only for the comparison, any finite input replaces them).
void block_min_max(const float* xb, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    if (xb[j] < min) min = xb[j];
    if (xb[j] > max) max = xb[j];
  }
}

}  // namespace

void quantize_row_q4_1(const float* x, BlockQ4_1* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    float min, max;
    block_min_max(xb, min, max);
    // 15 steps span [min, max]; the quants are measured from the minimum.
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    y[b].m = f32_to_fp16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = (xb[j] - min) * id;
      const float x1 = (xb[kQK / 2 + j] - min) * id;
      // ggml: MIN(15, (int8_t)(v + 0.5f)) -- round half up by truncation, then clamp.
      const int q0 = std::min(15, int(int8_t(x0 + 0.5f)));
      const int q1 = std::min(15, int(int8_t(x1 + 0.5f)));
      y[b].qs[j] = uint8_t(uint8_t(q0) | uint8_t(q1) << 4);
    }
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    // As Q4_0: the element of largest magnitude, with its sign, maps to -16. The first one wins
    // ties, since only a strictly larger magnitude replaces it.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = xb[j] * id;
      const float x1 = xb[kQK / 2 + j] * id;
      // x * id lies in [-16, 16]; +16.5 and truncation round it to 0..32, and 32 clamps to 31.
      const int q0 = std::min(31, int(int8_t(x0 + 16.5f)));
      const int q1 = std::min(31, int(int8_t(x1 + 16.5f)));
      y[b].qs[j] = uint8_t((q0 & 0x0f) | (q1 & 0x0f) << 4);
      qh |= uint32_t((q0 & 0x10) >> 4) << j;
      qh |= uint32_t((q1 & 0x10) >> 4) << (j + kQK / 2);
    }
    store_fifth_bits(qh, y[b].qh);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    float min, max;
    block_min_max(xb, min, max);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    y[b].m = f32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = (xb[j] - min) * id;
      const float x1 = (xb[kQK / 2 + j] - min) * id;
      // ggml: (uint8_t)(v + 0.5f), without Q4_1's clamp (v never reaches 31.5).
      const uint8_t q0 = uint8_t(x0 + 0.5f);
      const uint8_t q1 = uint8_t(x1 + 0.5f);
      y[b].qs[j] = uint8_t((q0 & 0x0f) | (q1 & 0x0f) << 4);
      qh |= uint32_t((q0 & 0x10) >> 4) << j;
      qh |= uint32_t((q1 & 0x10) >> 4) << (j + kQK / 2);
    }
    store_fifth_bits(qh, y[b].qh);
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(x[b].d);
    const float m = fp16_to_f32(x[b].m);
    float* yb = y + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      yb[j] = float(x[b].qs[j] & 0x0f) * d + m;
      yb[kQK / 2 + j] = float(x[b].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(x[b].d);
    const uint32_t qh = load_fifth_bits(x[b].qh);
    float* yb = y + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = int((qh >> j) & 1u) << 4;
      const int h1 = int((qh >> (j + kQK / 2)) & 1u) << 4;
      yb[j] = float(((x[b].qs[j] & 0x0f) | h0) - 16) * d;
      yb[kQK / 2 + j] = float(((x[b].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(x[b].d);
    const float m = fp16_to_f32(x[b].m);
    const uint32_t qh = load_fifth_bits(x[b].qh);
    float* yb = y + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = int((qh >> j) & 1u) << 4;
      const int h1 = int((qh >> (j + kQK / 2)) & 1u) << 4;
      yb[j] = float((x[b].qs[j] & 0x0f) | h0) * d + m;
      yb[kQK / 2 + j] = float((x[b].qs[j] >> 4) | h1) * d + m;
    }
  }
}

}  // namespace tandem
