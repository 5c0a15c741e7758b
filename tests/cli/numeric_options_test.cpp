// The numeric options' checks (tools/tandem/numeric_options.cpp), value by value: what a person
// writes is read as they mean it, and refused in their terms with the bounds as they write them.
#include <gtest/gtest.h>

#include <string>

#include "tools/tandem/numeric_options.h"

namespace tandem::cli {
namespace {

// The problem with `text` as an integer lo..hi ("" when good), and the text CLI11 then converts.
std::pair<std::string, std::string> integer(std::string text, int64_t lo, int64_t hi) {
  std::string problem = check_integer(text, lo, hi);
  return {problem, text};
}

std::pair<std::string, std::string> seed(std::string text) {
  std::string problem = check_uint64(text);
  return {problem, text};
}

TEST(NumericOptions, IntegersInRangeAreHandedOnAsPlainDecimal) {
  EXPECT_EQ(integer("4", 1, 1024), std::make_pair(std::string(), std::string("4")));
  EXPECT_EQ(integer("1024", 1, 1024).first, "");
  // strtoll in base 0 (CLI11's conversion) would read 010 as 8 and +7 is only a sign.
  EXPECT_EQ(integer("010", 0, 1 << 20).second, "10");
  EXPECT_EQ(integer("+7", 0, 10).second, "7");
  EXPECT_EQ(integer("-1", -1, INT32_MAX).second, "-1");
}

TEST(NumericOptions, IntegersOutsideTheirRangeSayWhichBound) {
  EXPECT_EQ(integer("0", 1, 1024).first, "0 is below 1 (1..1024)");
  EXPECT_EQ(integer("100000", 1, 1024).first, "100000 is past 1024 (1..1024)");
  EXPECT_EQ(integer("-1", 0, INT32_MAX).first, "-1 is negative (>= 0)");
  EXPECT_EQ(integer("-2", -1, INT32_MAX).first, "-2 is below -1 (>= -1)");
  EXPECT_EQ(integer("2147483648", 0, INT32_MAX).first, "2147483648 is past 2^31-1");
  EXPECT_EQ(integer("99999999999999999999999", 0, INT32_MAX).first, "99999999999999999999999 is past 2^31-1");
  EXPECT_EQ(integer("-99999999999999999999999", 0, 10).first, "-99999999999999999999999 is negative (0..10)");
}

TEST(NumericOptions, WhatIsNotAnIntegerIsSaidSo) {
  for (const char* text : {"abc", "1.5", "1e3", "0x10", " 4", "4 ", "--", "-", "+", "4k"}) {
    EXPECT_EQ(integer(text, 0, 100).first, "'" + std::string(text) + "' is not an integer") << text;
  }
  EXPECT_EQ(integer("", 0, 100).first, "an empty value is not an integer");
}

TEST(NumericOptions, SeedsAreExactlyZeroTo2To64Minus1) {
  EXPECT_EQ(seed("0"), std::make_pair(std::string(), std::string("0")));
  EXPECT_EQ(seed("18446744073709551615"), std::make_pair(std::string(), std::string("18446744073709551615")));
  EXPECT_EQ(seed("-0").second, "0");
  // strtoull saturated this to 2^64-1: two different seeds gave one run.
  EXPECT_EQ(seed("18446744073709551616").first, "18446744073709551616 is past 2^64-1");
  EXPECT_EQ(seed("-1").first, "-1 is negative (0..2^64-1)");
  EXPECT_EQ(seed("abc").first, "'abc' is not an integer");
  EXPECT_EQ(seed("1.5").first, "'1.5' is not an integer");
  EXPECT_EQ(seed("").first, "an empty value is not an integer");
}

TEST(NumericOptions, RealsAreFiniteAndInTheirRange) {
  const RealRange at_least_0{0, HUGE_VAL, false}, above_0{0, HUGE_VAL, true}, unit{0, 1, false}, top_p{0, 1, true};
  for (const char* good : {"0", "0.8", "1e-3", "2", "+1"}) EXPECT_EQ(check_real(good, at_least_0), "") << good;
  EXPECT_EQ(check_real("1", top_p), "");
  EXPECT_EQ(check_real("-1", at_least_0), "-1 is negative (>= 0)");
  EXPECT_EQ(check_real("0", above_0), "0 is not positive (> 0)");
  EXPECT_EQ(check_real("0.5", RealRange{1, HUGE_VAL, true}), "0.5 is not above 1 (> 1)");
  EXPECT_EQ(check_real("2", unit), "2 is outside [0, 1]");
  EXPECT_EQ(check_real("0", top_p), "0 is outside (0, 1]");
  EXPECT_EQ(check_real("-1", RealRange{0, 1e9, false}), "-1 is outside [0, 1e9]");
  EXPECT_EQ(check_real("inf", at_least_0), "inf is not finite (>= 0)");
  EXPECT_EQ(check_real("1e999", at_least_0), "1e999 is not finite (>= 0)");
  EXPECT_EQ(check_real("1e39", above_0), "1e39 is past the largest float, 3.4e38 (> 0)");
  for (const char* bad : {"abc", "nan", "0x1p3", " 1", "1,5", "1.5.2"}) {
    EXPECT_EQ(check_real(bad, at_least_0), "'" + std::string(bad) + "' is not a number") << bad;
  }
  EXPECT_EQ(check_real("", unit), "an empty value is not a number");
}

}  // namespace
}  // namespace tandem::cli
