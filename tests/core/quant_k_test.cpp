// The K-quants beyond the golden bytes (quant_rows_test.cpp): the reconstruction error on
// weight-like data, the all-zero super-block, and the packing of the sub-block scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/quant.h"
#include "tests/core/golden_inputs.h"

namespace tandem {
namespace {

// The weight-like super-blocks of golden_inputs_k() (near-Gaussian, outliers, uneven spreads).
std::vector<float> weight_like_inputs() {
  const std::vector<float> all = golden::golden_inputs_k();
  std::vector<float> x;
  for (size_t b = 0; b < all.size() / kQK_K; ++b)
    if (b % 10 == 9) x.insert(x.end(), all.begin() + long(b * kQK_K), all.begin() + long((b + 1) * kQK_K));
  return x;
}

template <class Block>
std::vector<float> round_trip(const std::vector<float>& x, void (*quant)(const float*, Block*, size_t),
                              void (*dequant)(const Block*, float*, size_t)) {
  std::vector<Block> q(x.size() / kQK_K);
  quant(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequant(q.data(), y.data(), x.size());
  return y;
}

// Per super-block, the RMS of the error relative to the RMS of the values. Sub-blocks share the
// super-block's scale grid, so those with a small spread beside the outliers lose most; the
// bounds sit about 1.3x above what ggml's quantizers reach on these inputs (q2_k 0.38, q3_k 0.23,
// q4_k 0.11, q5_k 0.057, q6_k 0.035).
double worst_relative_rms(const std::vector<float>& x, const std::vector<float>& y) {
  double worst = 0.0;
  for (size_t b = 0; b < x.size(); b += kQK_K) {
    double err = 0.0, ref = 0.0;
    for (size_t i = b; i < b + kQK_K; ++i) err += double(y[i] - x[i]) * (y[i] - x[i]), ref += double(x[i]) * x[i];
    worst = std::max(worst, std::sqrt(err / ref));
  }
  return worst;
}

TEST(QuantK, RoundTripErrorShrinksWithBitsOnWeightLikeData) {
  const std::vector<float> x = weight_like_inputs();
  ASSERT_EQ(x.size(), 8u * kQK_K);
  EXPECT_LT(worst_relative_rms(x, round_trip(x, quantize_row_q2_k, dequantize_row_q2_k)), 0.50);
  EXPECT_LT(worst_relative_rms(x, round_trip(x, quantize_row_q3_k, dequantize_row_q3_k)), 0.30);
  EXPECT_LT(worst_relative_rms(x, round_trip(x, quantize_row_q4_k, dequantize_row_q4_k)), 0.15);
  EXPECT_LT(worst_relative_rms(x, round_trip(x, quantize_row_q5_k, dequantize_row_q5_k)), 0.075);
  EXPECT_LT(worst_relative_rms(x, round_trip(x, quantize_row_q6_k, dequantize_row_q6_k)), 0.045);
}

// After the scale search, every element is re-quantized to the nearest level of its sub-block's
// final (fp16 and 6-bit rounded) scale and offset: the error is at most half a step, unless the
// value lies beyond the end levels, where it maps to the nearer end. Checked through Q4_K's
// stored fields, decoded here independently of the library.
TEST(QuantK, Q4_KElementsTakeTheNearestLevelOfTheirSubBlock) {
  const std::vector<float> x = weight_like_inputs();
  std::vector<BlockQ4_K> q(x.size() / kQK_K);
  quantize_row_q4_k(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row_q4_k(q.data(), y.data(), x.size());
  for (size_t b = 0; b < q.size(); ++b) {
    const float d = fp16_to_f32(q[b].d), dmin = fp16_to_f32(q[b].dmin);
    for (int j = 0; j < 8; ++j) {
      const uint8_t* s = q[b].scales;
      const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
      const int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      const float step = d * float(sc), lo = -dmin * float(m), hi = step * 15.0f + lo;
      ASSERT_GT(step, 0.0f) << "block " << b << " sub-block " << j;
      for (int i = 0; i < 32; ++i) {
        const size_t e = b * kQK_K + size_t(32 * j + i);
        const float want = std::clamp(x[e], lo, hi);
        EXPECT_LE(std::fabs(y[e] - want), 0.5f * step * 1.0001f) << "element " << e;
      }
    }
  }
}

TEST(QuantK, AllZeroSuperBlockQuantizesToZeros) {
  const std::vector<float> x(2 * kQK_K, 0.0f);
  const auto expect_zeros = [](const std::vector<float>& y, const char* type) {
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << type << " element " << i;
  };
  expect_zeros(round_trip(x, quantize_row_q2_k, dequantize_row_q2_k), "q2_k");
  expect_zeros(round_trip(x, quantize_row_q3_k, dequantize_row_q3_k), "q3_k");
  expect_zeros(round_trip(x, quantize_row_q4_k, dequantize_row_q4_k), "q4_k");
  expect_zeros(round_trip(x, quantize_row_q5_k, dequantize_row_q5_k), "q5_k");
  expect_zeros(round_trip(x, quantize_row_q6_k, dequantize_row_q6_k), "q6_k");

  // ggml writes an all-zero Q6_K super-block as all-zero bytes (and so does tandem).
  std::vector<BlockQ6_K> q6(2);
  std::memset(q6.data(), 0xAB, q6.size() * sizeof(BlockQ6_K));
  quantize_row_q6_k(x.data(), q6.data(), x.size());
  const auto* bytes = reinterpret_cast<const unsigned char*>(q6.data());
  for (size_t i = 0; i < q6.size() * sizeof(BlockQ6_K); ++i) ASSERT_EQ(int(bytes[i]), 0) << "byte " << i;
}

// Eight sub-blocks of evenly spaced values, sub-block j spanning [-(8 - j), 2 * (j + 1)] * 0.01:
// ranges and offsets both vary, so scales and minimums need their top two bits (which Q4_K and
// Q5_K keep in the spare bits of the first eight bytes). Unpacking the 12 bytes as ggml's
// get_scale_min_k4 does must give, per sub-block, a step within 5% of range / levels and an
// offset within half a step of the sub-block's minimum (the weighted fit moves both a little).
template <class Block>
void expect_scales_and_mins_follow_the_sub_blocks(void (*quant)(const float*, Block*, size_t), int levels) {
  std::vector<float> x(kQK_K);
  for (int j = 0; j < 8; ++j) {
    const float lo = -0.01f * float(8 - j), hi = 0.02f * float(j + 1);
    for (int i = 0; i < 32; ++i) x[32 * j + i] = lo + (hi - lo) * float(i) / 31.0f;
  }
  Block q;
  quant(x.data(), &q, kQK_K);
  const float d = fp16_to_f32(q.d), dmin = fp16_to_f32(q.dmin);
  for (int j = 0; j < 8; ++j) {
    const uint8_t* s = q.scales;
    const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    const int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    const float lo = -0.01f * float(8 - j), hi = 0.02f * float(j + 1);
    const float want_step = (hi - lo) / float(levels);
    EXPECT_NEAR(d * float(sc), want_step, 0.05f * want_step) << "sub-block " << j;
    EXPECT_NEAR(-dmin * float(m), lo, 0.5f * want_step) << "sub-block " << j;
  }
}

TEST(QuantK, Q4_KAndQ5_KPackSixBitScalesAndMinimums) {
  expect_scales_and_mins_follow_the_sub_blocks(quantize_row_q4_k, 15);
  expect_scales_and_mins_follow_the_sub_blocks(quantize_row_q5_k, 31);
}

// Q3_K's sixteen signed 6-bit scales: low nibbles in bytes 0-7, top two bits in bytes 8-11.
// Sixteen sub-blocks whose magnitudes grow, alternating in sign, must decode to scales whose
// magnitudes grow the same way.
TEST(QuantK, Q3_KPacksSixteenSignedScales) {
  std::vector<float> x(kQK_K);
  for (int j = 0; j < 16; ++j)
    for (int i = 0; i < 16; ++i) x[16 * j + i] = float(j + 1) * (i % 2 ? 0.1f : -0.05f) * float(i + 1) / 16.0f;
  BlockQ3_K q;
  quantize_row_q3_k(x.data(), &q, kQK_K);
  int prev = 0;
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? q.scales[j] & 0xF : q.scales[j - 8] >> 4;
    const int sc = (low | (((q.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
    // The scale of the largest sub-block maps to -32; the others in proportion to it.
    EXPECT_NEAR(double(sc), -32.0 * (j + 1) / 16.0, 1.0) << "sub-block " << j;
    EXPECT_LE(sc, prev) << "sub-block " << j;
    prev = sc;
  }
}

}  // namespace
}  // namespace tandem
