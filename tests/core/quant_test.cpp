#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/dtype.h"
#include "core/quant.h"
#include "tests/core/golden_inputs.h"

namespace tandem {
namespace {

std::vector<unsigned char> read_golden(const std::string& name) {
  std::ifstream f(std::string(TANDEM_SOURCE_DIR) + "/tests/core/golden/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

template <class Block>
void expect_identical(const std::vector<Block>& ours, const std::string& golden_name) {
  const std::vector<unsigned char> want = read_golden(golden_name);
  ASSERT_EQ(want.size(), ours.size() * sizeof(Block)) << golden_name;
  const auto* got = reinterpret_cast<const unsigned char*>(ours.data());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(int(got[i]), int(want[i])) << golden_name << ": first difference at byte " << i << " (block "
                                         << i / sizeof(Block) << ")";
  }
}

TEST(Quant, Q4_0MatchesGgmlReferenceBitForBit) {
  const std::vector<float> x = golden::golden_inputs();
  std::vector<BlockQ4_0> q(x.size() / kQK);
  quantize_row_q4_0(x.data(), q.data(), x.size());
  expect_identical(q, "q4_0.bin");
}

TEST(Quant, Q8_0MatchesGgmlReferenceBitForBit) {
  const std::vector<float> x = golden::golden_inputs();
  std::vector<BlockQ8_0> q(x.size() / kQK);
  quantize_row_q8_0(x.data(), q.data(), x.size());
  expect_identical(q, "q8_0.bin");
}

TEST(Quant, Fp16AndBf16RowsMatchGgml) {
  const std::vector<float> x = golden::golden_inputs();
  std::vector<fp16_t> h(x.size());
  std::vector<bf16_t> b(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_fp16(x[i]), b[i] = f32_to_bf16(x[i]);
  expect_identical(h, "f16.bin");
  expect_identical(b, "bf16.bin");
}

TEST(Quant, DequantizeQ4_0InvertsWithinHalfAStep) {
  const std::vector<float> x = golden::golden_inputs();
  std::vector<BlockQ4_0> q(x.size() / kQK);
  quantize_row_q4_0(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row_q4_0(q.data(), y.data(), x.size());
  for (size_t b = 0; b < q.size(); ++b) {
    // The block's scale before fp16 rounding: the element of largest magnitude maps to -8.
    float max = 0.0f;
    for (int j = 0; j < kQK; ++j)
      if (std::fabs(x[b * kQK + j]) > std::fabs(max)) max = x[b * kQK + j];
    const float d = std::fabs(max / -8.0f);
    const float d16 = std::fabs(fp16_to_f32(q[b].d));
    if (!std::isfinite(d16)) continue;  // blocks whose scale overflows fp16
    for (int j = 0; j < kQK; ++j) {
      const size_t i = b * kQK + j;
      // Rounding costs half a step; values beyond +7.5 steps clamp to level 7; the fp16 scale
      // adds at most 8 times its own rounding error.
      const float level = d > 0 ? x[i] / (max / -8.0f) : 0.0f;
      const float rounding = level > 7.5f ? std::fabs(x[i]) - 7.0f * d : 0.5f * d;
      const float bound = rounding * 1.0001f + 8.0f * std::fabs(d - d16) + 1e-30f;
      EXPECT_LE(std::fabs(y[i] - x[i]), bound) << "element " << i;
    }
  }
}

TEST(Quant, Q8_0RoundTripErrorIsBoundedByScale) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = std::sin(float(i)) * 3.0f;
  std::vector<BlockQ8_0> q(2);
  quantize_row_q8_0(x.data(), q.data(), 64);
  std::vector<float> y(64);
  dequantize_row_q8_0(q.data(), y.data(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(y[i], x[i], 3.0f / 127.0f);
}

TEST(DType, TraitsAndNames) {
  EXPECT_EQ(row_bytes(DType::Q4_0, 64), 36u);
  EXPECT_EQ(row_bytes(DType::Q8_0, 32), 34u);
  EXPECT_EQ(row_bytes(DType::F16, 10), 20u);
  EXPECT_EQ(dtype_from_name("q4_0"), DType::Q4_0);
  EXPECT_EQ(dtype_from_name("q4_k"), DType::Q4_K);
  EXPECT_EQ(row_bytes(DType::Q4_K, 512), 288u);
  EXPECT_EQ(row_bytes(DType::IQ4_XS, 256), 136u);
  EXPECT_FALSE(dtype_from_name("iq2_xxs").has_value());
  EXPECT_FALSE(dtype_traits(16u).has_value());  // iq2_xxs is not supported
  EXPECT_EQ(dtype_traits(30u)->name, "bf16");
}

}  // namespace
}  // namespace tandem
