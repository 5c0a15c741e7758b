// A distribution of request lengths (tokens) for choosing static-shape buckets (SEEDS B.4): a
// histogram file, or a named distribution. Lengths are integers >= 1; weights are normalized.
//
//   heavy-tail          Pareto (shape 1.5) truncated to 128..4096: most requests short, a long
//                       tail (assumption: SEEDS names the distribution but not its parameters)
//   pareto:A:LO-HI      Pareto with shape A truncated to LO..HI
//   uniform:LO-HI       every length in LO..HI equally likely
//   FILE                a histogram: one "length weight" pair per line, '#' comments
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tandem::buckets {

struct LengthDistribution {
  std::string name;
  std::vector<std::pair<int64_t, double>> points;  // (length, probability), ascending, sums to 1

  int64_t min_length() const { return points.front().first; }
  int64_t max_length() const { return points.back().first; }
  // The lengths a model of `context` tokens can be asked for: every length above it is asked as
  // `context` (a prompt is cut to the cache), so its probability moves there.
  LengthDistribution capped(int64_t context) const;
  double mean() const;
  // Builds from (length, weight) pairs: merges repeats, sorts, normalizes. Errors name `what`.
  static Result<LengthDistribution> from_weights(std::vector<std::pair<int64_t, double>> weights, const std::string& what);
  // A named distribution (above) or a histogram file.
  static Result<LengthDistribution> parse(const std::string& spec);
  static Result<LengthDistribution> load_histogram(const std::string& path);
};

}  // namespace tandem::buckets
