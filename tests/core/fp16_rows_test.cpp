// The hardware row conversions (F16C on x86-64, fcvt on aarch64) give exactly the bits of
// core/half.h's conversions, including ties, subnormals, overflow and NaN payloads, so the NPU
// model's results and the f16 KV cache do not depend on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/fp16_rows.h"

namespace tandem {
namespace {

std::vector<float> awkward_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e9f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::bit_cast<float>(0x7fc00001u), std::bit_cast<float>(0xffa12345u),  // NaNs, one signaling
                          std::bit_cast<float>(0x7f80e000u), 5.96e-8f, 2.98e-8f, 2.9802322e-8f, 6.1e-5f, 6.0975552e-5f};
  // Exact ties between neighbouring fp16 values, at several exponents (normal and subnormal).
  for (int e = -24; e <= 15; ++e) {
    const float ulp = std::ldexp(1.0f, std::max(e - 10, -24));
    for (int m = 0; m < 4; ++m) v.push_back(std::ldexp(1.0f, e) + (2 * m + 1) * ulp / 2);
  }
  std::mt19937 rng(5);
  for (float scale : {1e-6f, 1e-3f, 1.0f, 100.0f, 3e4f}) {
    std::normal_distribution<float> d(0.0f, scale);
    for (int i = 0; i < 200; ++i) v.push_back(d(rng));
  }
  while (v.size() % 8 != 3) v.push_back(0.5f);  // a tail for the scalar loop too
  return v;
}

TEST(Fp16Rows, SimdNarrowMatchesPortableBits) {
  if (!fp16_rows_simd_available()) GTEST_SKIP() << "no F16C here (x86-64 without it)";
  const std::vector<float> src = awkward_values();
  const int n = int(src.size());
  for (bool acc : {false, true}) {
    std::vector<uint8_t> want(size_t(n) * 2), got;
    for (int i = 0; i < n; ++i) {  // something to accumulate onto: the previous value's fp16
      const uint16_t h = uint16_t(0x3c00 + (i * 37) % 0x3000);
      std::memcpy(&want[size_t(i) * 2], &h, 2);
    }
    got = want;
    narrow_fp16_row_portable(src.data(), want.data(), n, acc);
    narrow_fp16_row_simd(src.data(), got.data(), n, acc);
    for (int i = 0; i < n; ++i) {
      uint16_t w, g;
      std::memcpy(&w, &want[size_t(i) * 2], 2);
      std::memcpy(&g, &got[size_t(i) * 2], 2);
      EXPECT_EQ(w, g) << "value " << src[size_t(i)] << " (bits " << std::hex << std::bit_cast<uint32_t>(src[size_t(i)])
                      << ") accumulate " << acc;
    }
  }
}

TEST(Fp16Rows, SimdWidenMatchesPortableForEveryHalf) {
  if (!fp16_rows_simd_available()) GTEST_SKIP() << "no F16C here (x86-64 without it)";
  std::vector<uint8_t> halves(65536 * 2);
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t v = uint16_t(h);
    std::memcpy(&halves[h * 2], &v, 2);
  }
  std::vector<float> want(65536), got(65536);
  widen_fp16_row_portable(halves.data(), want.data(), 65536);
  widen_fp16_row_simd(halves.data(), got.data(), 65536);
  size_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += std::bit_cast<uint32_t>(want[i]) != std::bit_cast<uint32_t>(got[i]);
  EXPECT_EQ(differ, 0u);
}

}  // namespace
}  // namespace tandem
