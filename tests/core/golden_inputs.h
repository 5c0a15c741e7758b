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

// For the 256-element super-blocks of the K-quants (and every other type: 256 is a multiple of
// 32): 80 super-blocks, whole super-blocks in one of the patterns above (zero, equal, subnormal,
// overflow-range, exact levels ...), super-blocks whose 32-element sub-blocks cycle through them
// (a zero or tiny sub-block beside large ones, as the sub-block scale search must handle), and
// weight-like ones (roughly Gaussian with a few outliers, the sub-blocks' spreads differing).
constexpr int kGoldenKCount = 80 * 256;

inline std::vector<float> golden_inputs_k() {
  std::vector<float> x(kGoldenKCount);
  uint64_t s = 0x0badc0ffee0ddf00ull;
  auto next = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return double(s >> 11) / 9007199254740992.0;
  };
  auto pattern = [&](int kind, int block, int j) -> float {
    const double u = next();
    switch (kind) {
      case 0: return float(2.0 * u - 1.0);
      case 1: return float((2.0 * u - 1.0) * std::pow(10.0, block % 11 - 6));
      case 2: return 0.0f;
      case 3: return j == 5 ? -3.0f : float(u);
      case 4: return float(int(u * 17) - 8) * 0.25f;
      case 5: return 1.0f;
      case 6: return float((u - 0.5) * 131072.0);
      default: return float((u - 0.5) * 1e-6);
    }
  };
  for (int i = 0; i < kGoldenKCount; ++i) {
    const int super = i / 256, sub = (i % 256) / 32, j = i % 32;
    switch (super % 10) {
      case 8: x[i] = pattern((sub + super / 10) % 8, super + sub, j); break;
      case 9: {
        // Sum of four uniforms (near Gaussian), the sub-block's spread 2^-(sub % 5), and one
        // outlier per 64 elements.
        const double g = next() + next() + next() + next() - 2.0;
        x[i] = float(g * std::ldexp(0.05, -(sub % 5)) * ((i % 64) == 17 ? 12.0 : 1.0));
        break;
      }
      default: x[i] = pattern(super % 10, super, i % 256); break;
    }
  }
  return x;
}

}  // namespace tandem::golden
