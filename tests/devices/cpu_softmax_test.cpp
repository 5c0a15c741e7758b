// The cpu's softmax_row against an fp64 reference. It keeps sixteen running maxima and sums (so
// the loops vectorize); every one of them must reach the result.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "devices/cpu/ops.h"

namespace tandem {
namespace {

// The two largest scores (200 and 199) share a lane (16 apart) and the others are a few units:
// a maximum that missed that lane would come from the others, and exp() of ~197 for both clamps
// to the same ~1.7e38, so the two would weigh the same instead of e : 1.
TEST(CpuSoftmax, MatchesTheReferenceWhereverTheMaximumLies) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> spread(-3.0f, 3.0f);
  for (int64_t valid : {int64_t(1), int64_t(15), int64_t(16), int64_t(37), int64_t(100)}) {
    for (int64_t peak = 0; peak < std::min<int64_t>(valid, 17); ++peak) {
      const int64_t len = valid + 5;
      std::vector<float> row(static_cast<size_t>(len));
      for (float& x : row) x = spread(rng);
      row[size_t(peak)] = 200.0f;
      if (peak + 16 < valid) row[size_t(peak + 16)] = 199.0f;
      std::vector<double> want(static_cast<size_t>(valid));
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < valid; ++i) mx = std::max(mx, double(row[size_t(i)]));
      for (int64_t i = 0; i < valid; ++i) sum += want[size_t(i)] = std::exp(double(row[size_t(i)]) - mx);
      cpu::softmax_row(row.data(), valid, len);
      const std::string at = "valid " + std::to_string(valid) + " peak " + std::to_string(peak);
      for (int64_t i = 0; i < valid; ++i) ASSERT_NEAR(row[size_t(i)], want[size_t(i)] / sum, 1e-6) << at << " at " << i;
      for (int64_t i = valid; i < len; ++i) ASSERT_EQ(row[size_t(i)], 0.0f) << at << " past the valid ones";
    }
  }
}

}  // namespace
}  // namespace tandem
