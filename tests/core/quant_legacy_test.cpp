// Q4_1, Q5_0, Q5_1, IQ4_NL and IQ4_XS beyond the golden bytes (quant_rows_test.cpp): each
// type's round-trip error bound on the golden inputs, the bit layout of the fifth bits, and the
// inputs each format can represent exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/quant.h"
#include "tests/core/golden_inputs.h"

namespace tandem {
namespace {

constexpr float kSmallestNormalHalf = 6.103515625e-05f;  // 2^-14

// A stored fp16 scale whose rounding error is bounded relative to itself (2^-11): normal, finite.
bool normal_half(float v) { return std::isfinite(v) && std::fabs(v) >= kSmallestNormalHalf; }

// Q4_1 / Q5_1: quants are levels above the block minimum, `levels` steps spanning [min, max].
// Rounding costs half a step; the fp16 scale adds up to `levels` times its rounding error, the fp16
// minimum its own; the float arithmetic a few ulps of the block's magnitude.
template <class Block, class Quantize, class Dequantize>
void expect_min_scale_round_trip(int levels, Quantize quantize, Dequantize dequantize) {
  const std::vector<float> x = golden::golden_inputs_k();
  std::vector<Block> q(x.size() / kQK);
  quantize(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize(q.data(), y.data(), x.size());
  size_t checked = 0;
  for (size_t b = 0; b < q.size(); ++b) {
    const float* xb = x.data() + b * kQK;
    const float min = *std::min_element(xb, xb + kQK), max = *std::max_element(xb, xb + kQK);
    const float d = (max - min) / float(levels);
    const float d16 = fp16_to_f32(q[b].d), m16 = fp16_to_f32(q[b].m);
    if (!std::isfinite(d16) || !std::isfinite(m16)) continue;  // blocks beyond fp16's range
    ++checked;
    const float bound = 0.5f * d * 1.0001f + float(levels) * std::fabs(d - d16) + std::fabs(m16 - min) +
                        4e-7f * std::max(std::fabs(min), std::fabs(max)) + 1e-30f;
    for (int j = 0; j < kQK; ++j)
      EXPECT_LE(std::fabs(y[b * kQK + j] - xb[j]), bound) << "block " << b << ", element " << j;
  }
  EXPECT_GT(checked, q.size() / 2);
}

TEST(QuantLegacy, Q4_1RoundTripIsWithinHalfAStep) {
  expect_min_scale_round_trip<BlockQ4_1>(15, quantize_row_q4_1, dequantize_row_q4_1);
}

TEST(QuantLegacy, Q5_1RoundTripIsWithinHalfAStep) {
  expect_min_scale_round_trip<BlockQ5_1>(31, quantize_row_q5_1, dequantize_row_q5_1);
}

TEST(QuantLegacy, Q5_0RoundTripIsWithinHalfAStep) {
  const std::vector<float> x = golden::golden_inputs_k();
  std::vector<BlockQ5_0> q(x.size() / kQK);
  quantize_row_q5_0(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row_q5_0(q.data(), y.data(), x.size());
  size_t checked = 0;
  for (size_t b = 0; b < q.size(); ++b) {
    const float* xb = x.data() + b * kQK;
    // The element of largest magnitude maps to -16 steps: d = max / -16.
    float max = 0.0f;
    for (int j = 0; j < kQK; ++j)
      if (std::fabs(xb[j]) > std::fabs(max)) max = xb[j];
    const float d = max / -16.0f;
    const float d16 = fp16_to_f32(q[b].d);
    if (!std::isfinite(d16)) continue;
    ++checked;
    for (int j = 0; j < kQK; ++j) {
      // Half a step, except that +16 steps (the opposite sign of the extreme) clamps to +15.
      const float level = d != 0.0f ? xb[j] / d : 0.0f;
      const float rounding = level > 15.5f ? std::fabs(xb[j]) - 15.0f * std::fabs(d) : 0.5f * std::fabs(d);
      const float bound = rounding * 1.0001f + 16.0f * std::fabs(d - d16) + 1e-30f;
      EXPECT_LE(std::fabs(y[b * kQK + j] - xb[j]), bound) << "block " << b << ", element " << j;
    }
  }
  EXPECT_GT(checked, q.size() / 2);
}

// The fifth bit of element j is bit j of the little-endian word qh, whatever the host's byte
// order: with scale 1, element j of a ramp gets quant j, so elements 16..31 carry the fifth bit.
TEST(QuantLegacy, Q5FifthBitsAreBitJOfLittleEndianWord) {
  float ramp0[kQK], ramp1[kQK];
  for (int j = 0; j < kQK; ++j) {
    ramp0[j] = float(j - 16);  // Q5_0: the extreme -16 gives d = 1, quant = value + 16 = j
    ramp1[j] = float(j);       // Q5_1: min 0, max 31 gives d = 1, quant j
  }
  BlockQ5_0 q0;
  BlockQ5_1 q1;
  quantize_row_q5_0(ramp0, &q0, kQK);
  quantize_row_q5_1(ramp1, &q1, kQK);
  EXPECT_EQ(fp16_to_f32(q0.d), 1.0f);
  EXPECT_EQ(fp16_to_f32(q1.d), 1.0f);
  EXPECT_EQ(fp16_to_f32(q1.m), 0.0f);
  for (const uint8_t* qh : {q0.qh, q1.qh}) {
    EXPECT_EQ(qh[0], 0x00);
    EXPECT_EQ(qh[1], 0x00);
    EXPECT_EQ(qh[2], 0xff);
    EXPECT_EQ(qh[3], 0xff);
  }
  for (int j = 0; j < kQK / 2; ++j) {
    EXPECT_EQ(q0.qs[j], uint8_t(j | j << 4)) << j;  // j and j+16 share their low four bits
    EXPECT_EQ(q1.qs[j], uint8_t(j | j << 4)) << j;
  }
  float y0[kQK], y1[kQK];
  dequantize_row_q5_0(&q0, y0, kQK);
  dequantize_row_q5_1(&q1, y1, kQK);
  for (int j = 0; j < kQK; ++j) {
    EXPECT_EQ(y0[j], ramp0[j]) << j;
    EXPECT_EQ(y1[j], ramp1[j]) << j;
  }
}

// A block of one value has zero range: scale 0, every quant 0, and the fp16 minimum alone carries
// the value, exactly when it is representable in fp16.
TEST(QuantLegacy, Q4_1AndQ5_1ReproduceAnAllEqualBlockThroughTheMinimum) {
  for (const float v : {-2.375f, 1.0f, 0.0f, 1000.5f}) {
    std::vector<float> x(2 * kQK, v);
    BlockQ4_1 q4[2];
    BlockQ5_1 q5[2];
    quantize_row_q4_1(x.data(), q4, x.size());
    quantize_row_q5_1(x.data(), q5, x.size());
    std::vector<float> y4(x.size()), y5(x.size());
    dequantize_row_q4_1(q4, y4.data(), x.size());
    dequantize_row_q5_1(q5, y5.data(), x.size());
    for (int b = 0; b < 2; ++b) {
      EXPECT_EQ(q4[b].d, 0) << v;
      EXPECT_EQ(q5[b].d, 0) << v;
      EXPECT_EQ(fp16_to_f32(q4[b].m), v);
      EXPECT_EQ(fp16_to_f32(q5[b].m), v);
      for (int j = 0; j < kQK / 2; ++j) EXPECT_EQ(q4[b].qs[j] | q5[b].qs[j], 0) << v;
      for (int k = 0; k < 4; ++k) EXPECT_EQ(q5[b].qh[k], 0) << v;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(y4[i], v) << i;
      EXPECT_EQ(y5[i], v) << i;
    }
  }
}

// Each of the 16 levels twice, in a scrambled order, times `scale`.
std::vector<float> scaled_levels(float scale, int seed) {
  std::vector<float> x(kQK);
  for (int j = 0; j < kQK; ++j) x[j] = scale * float(kIq4nlLevels[(j * 7 + seed) % 16]);
  return x;
}

// Inputs that are a power-of-two scale times table levels are fixed points: with weights x^2 the
// least-squares scale is exactly that power of two (numerator and denominator differ by it
// alone), and each element is exactly its level.
TEST(QuantLegacy, Iq4NlReproducesScaledTableLevelsExactly) {
  for (const float scale : {0.125f, -0.5f, 64.0f}) {
    const std::vector<float> x = scaled_levels(scale, 3);
    BlockIQ4_NL q;
    quantize_row_iq4_nl(x.data(), &q, kQK);
    float y[kQK];
    dequantize_row_iq4_nl(&q, y, kQK);
    EXPECT_EQ(std::fabs(fp16_to_f32(q.d)), std::fabs(scale));
    for (int j = 0; j < kQK; ++j) EXPECT_EQ(y[j], x[j]) << "scale " << scale << ", element " << j;
  }
}

// IQ4_XS the same way, the sub-block scales 2^-3 .. 2^-7 (6-bit codes -32 .. -2 against the
// super-block scale -2^-8), one sub-block negated and one all zero.
TEST(QuantLegacy, Iq4XsReproducesScaledTableLevelsExactly) {
  std::vector<float> x;
  for (int ib = 0; ib < kQK_K / kQK; ++ib) {
    const float scale = ib == 6 ? 0.0f : std::ldexp(ib == 2 ? -1.0f : 1.0f, -3 - ib % 5);
    const std::vector<float> sub = scaled_levels(scale, ib);
    x.insert(x.end(), sub.begin(), sub.end());
  }
  BlockIQ4_XS q;
  quantize_row_iq4_xs(x.data(), &q, kQK_K);
  std::vector<float> y(kQK_K);
  dequantize_row_iq4_xs(&q, y.data(), kQK_K);
  EXPECT_EQ(fp16_to_f32(q.d), -std::ldexp(1.0f, -8));
  for (int i = 0; i < kQK_K; ++i) EXPECT_EQ(y[i], x[i]) << "sub-block " << i / kQK << ", element " << i % kQK;
}

// ggml stores an all-zero IQ4_XS super-block's scale as -max_scale/32 = -0.0f, fp16 0x8000.
TEST(QuantLegacy, Iq4XsAllZeroSuperBlockStoresNegativeZeroScale) {
  std::vector<float> x(kQK_K, 0.0f);
  BlockIQ4_XS q;
  quantize_row_iq4_xs(x.data(), &q, kQK_K);
  EXPECT_EQ(q.d, 0x8000);
  std::vector<float> y(kQK_K, 1.0f);
  dequantize_row_iq4_xs(&q, y.data(), kQK_K);
  for (int i = 0; i < kQK_K; ++i) EXPECT_EQ(y[i], 0.0f) << i;
}

// Distance from v to the nearest of scale * kIq4nlLevels.
float distance_to_levels(float v, float scale) {
  float best = INFINITY;
  for (const int8_t l : kIq4nlLevels) best = std::min(best, std::fabs(v - scale * float(l)));
  return best;
}

// One IQ4 sub-block of the round trip, given the stored (fp16-derived) scale `s16` and a bound on
// its difference from the float scale the levels were chosen with: each element's level is the
// nearest one under the float scale, so it is as near as the nearest under the stored one up to
// twice the largest level (127) times that difference. And the scale is sensible: no element is
// off by more than `coarse`.
void expect_iq4_sub_block(const float* x, const float* y, float s16, float scale_err, float coarse, const char* what,
                          size_t block) {
  for (int j = 0; j < kQK; ++j) {
    const float err = std::fabs(y[j] - x[j]);
    EXPECT_LE(err, distance_to_levels(x[j], s16) + 2.0f * 127.0f * scale_err + 1e-6f * std::fabs(x[j]))
        << what << " block " << block << ", element " << j;
    EXPECT_LE(err, coarse) << what << " block " << block << ", element " << j;
  }
}

float abs_max(const float* x, int n) {
  float m = 0.0f;
  for (int j = 0; j < n; ++j) m = std::max(m, std::fabs(x[j]));
  return m;
}

// The round-trip bounds below use 0.15 of the (sub-)block's largest magnitude as the coarse
// bound: half the widest gap of the table (24 of 127) plus clamping at its ends, with margin.
TEST(QuantLegacy, Iq4NlRoundTripPicksTheNearestLevels) {
  const std::vector<float> x = golden::golden_inputs_k();
  std::vector<BlockIQ4_NL> q(x.size() / kQK);
  quantize_row_iq4_nl(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row_iq4_nl(q.data(), y.data(), x.size());
  size_t checked = 0;
  for (size_t b = 0; b < q.size(); ++b) {
    const float d16 = fp16_to_f32(q[b].d);
    if (!normal_half(d16)) continue;
    ++checked;
    const float* xb = x.data() + b * kQK;
    expect_iq4_sub_block(xb, y.data() + b * kQK, d16, std::ldexp(std::fabs(d16), -11) * 1.001f,
                         0.15f * abs_max(xb, kQK), "iq4_nl", b);
  }
  EXPECT_GT(checked, q.size() / 2);
}

TEST(QuantLegacy, Iq4XsRoundTripPicksTheNearestLevels) {
  const std::vector<float> x = golden::golden_inputs_k();
  std::vector<BlockIQ4_XS> q(x.size() / kQK_K);
  quantize_row_iq4_xs(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row_iq4_xs(q.data(), y.data(), x.size());
  size_t checked = 0;
  for (size_t b = 0; b < q.size(); ++b) {
    const float d16 = fp16_to_f32(q[b].d);
    if (!normal_half(d16)) continue;
    ++checked;
    for (int ib = 0; ib < kQK_K / kQK; ++ib) {
      const int code = ((q[b].scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | ((q[b].scales_h >> (2 * ib)) & 3) << 4;
      const float l = float(code - 32);
      const float* xb = x.data() + b * kQK_K + ib * kQK;
      // The sub-block scale is l times the super-block's; rounding it to a 6-bit code costs up to
      // one super-block scale (a scale of the opposite sign to the largest clamps from +32 to +31)
      // per level step, 127 steps at most, and the fp16 super-block scale under 2 more.
      expect_iq4_sub_block(xb, y.data() + b * kQK_K + ib * kQK, d16 * l,
                           std::fabs(l) * std::ldexp(std::fabs(d16), -11) * 1.001f,
                           0.15f * abs_max(xb, kQK) + 130.0f * std::fabs(d16), "iq4_xs", b);
    }
  }
  EXPECT_GT(checked, q.size() / 2);
}

}  // namespace
}  // namespace tandem
