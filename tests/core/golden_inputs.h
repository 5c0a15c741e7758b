// Deterministic inputs for the bit-exactness tests of the quantizers and half conversions.
// tools/dev/make_quant_golden.cpp feeds the same inputs to ggml's reference functions to produce
// tests/core/golden/*.bin; the tests compare tandem's output with those bytes.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace tandem::golden {

constexpr int kGoldenCount = 32 * 256;

inline std::vector<float> golden_inputs() {
  std::vector<float> x(kGoldenCount);
  uint64_t s = 0x1234567887654321ull;
  auto next = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return double(s >> 11) / 9007199254740992.0;
  };
  for (int i = 0; i < kGoldenCount; ++i) {
    const int block = i / 32, j = i % 32;
    const double u = next();
    switch (block % 8) {
      case 0: x[i] = float(2.0 * u - 1.0); break;                          // uniform
      case 1: x[i] = float((2.0 * u - 1.0) * std::pow(10.0, block % 11 - 6)); break;  // scales
      case 2: x[i] = 0.0f; break;                                           // all zero
      case 3: x[i] = j == 5 ? -3.0f : float(u); break;                      // negative extreme
      case 4: x[i] = float(int(u * 17) - 8) * 0.25f; break;                 // exact levels, ties
      case 5: x[i] = 1.0f; break;                                           // all equal
      case 6: x[i] = float((u - 0.5) * 131072.0); break;                    // fp16 overflow range
      default: x[i] = float((u - 0.5) * 1e-6); break;                       // fp16 subnormals
    }
  }
  return x;
}

}  // namespace tandem::golden
