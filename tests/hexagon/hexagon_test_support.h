// Shared pieces of the hexagon tests: random weights and activations, bit comparison, and the
// rule for a missing toolchain (skip with the reason, or fail when TANDEM_REQUIRE_HEXAGON=1).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/quant.h"
#include "hexagon/host/toolchain.h"
#include "hexagon/reference.h"

namespace tandem::hexagon::testing {

inline bool hexagon_required() {
  const char* v = std::getenv("TANDEM_REQUIRE_HEXAGON");
  return v && std::string(v) == "1";
}

// In SetUp or a test body: skips (or fails, when required) without the toolchain.
#define TANDEM_HEXAGON_OR_SKIP()                                                                     \
  do {                                                                                               \
    auto tandem_tc_ = ::tandem::hexagon::find_hexagon_toolchain();                                   \
    if (!tandem_tc_.ok()) {                                                                          \
      if (::tandem::hexagon::testing::hexagon_required()) FAIL() << tandem_tc_.status().message();  \
      GTEST_SKIP() << tandem_tc_.status().message();                                                 \
    }                                                                                                \
  } while (0)

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Bit-equal, or both NaN (the payload of a NaN is the core's, see reference.h).
inline bool same_float(float a, float b) { return bits_of(a) == bits_of(b) || (std::isnan(a) && std::isnan(b)); }

// n rows of in floats, each block with its own magnitude (10^-3 .. 10^3) so blocks' scales differ.
inline std::vector<float> random_activations(uint32_t n, uint32_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), e(-3.0f, 3.0f);
  std::vector<float> x(size_t(n) * in);
  for (size_t b = 0; b < x.size(); b += 32) {
    const float mag = std::pow(10.0f, e(rng));
    for (size_t j = b; j < b + 32; ++j) x[j] = u(rng) * mag;
  }
  return x;
}

// Weights as llama-quantize writes them: random floats through core's (ggml's) quantizers.
inline std::vector<uint8_t> quantized_weights(WeightFormat f, uint32_t rows, uint32_t in, uint32_t seed) {
  const std::vector<float> w = random_activations(rows, in, seed);
  std::vector<uint8_t> bytes(weight_bytes(f, rows, in));
  for (uint32_t r = 0; r < rows; ++r) {
    uint8_t* dst = bytes.data() + weight_bytes(f, r, in);
    if (f == WeightFormat::kQ8_0)
      quantize_row_q8_0(w.data() + size_t(r) * in, reinterpret_cast<BlockQ8_0*>(dst), in);
    else
      quantize_row_q4_0(w.data() + size_t(r) * in, reinterpret_cast<BlockQ4_0*>(dst), in);
  }
  return bytes;
}

// Any bytes at all in the values (Q8_0's -128 included, every nibble), scales random finite fp16
// (subnormals included) between 2^-24 and 65504.
inline std::vector<uint8_t> raw_weights(WeightFormat f, uint32_t rows, uint32_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(weight_bytes(f, rows, in));
  for (uint8_t& b : bytes) b = uint8_t(rng());
  for (size_t at = 0; at < bytes.size(); at += block_bytes(f)) {
    uint16_t d = uint16_t(rng() & 0xffff);
    if ((d & 0x7c00) == 0x7c00) d &= 0xbfff;  // not inf / NaN
    bytes[at] = uint8_t(d);
    bytes[at + 1] = uint8_t(d >> 8);
  }
  return bytes;
}

}  // namespace tandem::hexagon::testing
