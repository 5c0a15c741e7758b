#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/half.h"

namespace tandem {
namespace {

TEST(Half, EveryFp16RoundTripsThroughF32) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_f32(fp16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_fp16(f), fp16_t(h)) << "half bits " << h;
  }
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 is exactly between 1 and the next half (1 + 2^-10): ties to even -> 1.
  EXPECT_EQ(f32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
  // 1 + 3 * 2^-11 lies between 1 + 2^-10 and 1 + 2^-9: ties to even -> 1 + 2^-9 (mantissa 2).
  EXPECT_EQ(f32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(f32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_fp16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_fp16(0x1p-25f), 0x0000);  // tie between 0 and the smallest subnormal: even
  EXPECT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(std::nanf("")))));
}

TEST(Half, Bf16RoundsToNearestEvenAndKeepsNan) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_f32(0x4040), 3.0f);
}

}  // namespace
}  // namespace tandem
