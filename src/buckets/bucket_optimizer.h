// Length buckets for static-shape NPU graphs (SEEDS B.4): a request of length l runs in the
// smallest bucket b >= l, padded to b. Given a length distribution p(l) and a latency proxy T(b),
// choose at most K boundaries minimizing
//
//     E[T(b(l))] + padding_weight * E[b(l) - l] + variant_weight * (number of buckets)
//
// by dynamic programming over sorted candidate boundaries (O(K m^2) for m candidates), exact
// against brute force (a test). Fixed policies (powers of two, every N, one bucket) are scored the
// same way for comparison.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "buckets/length_distribution.h"

namespace tandem::buckets {

struct BucketObjective {
  std::function<double(int64_t bucket)> latency;  // T(b): latency proxy of one request in bucket b
  double padding_weight = 0;   // per padded token (same unit as T)
  double variant_weight = 0;   // per bucket: code size, compile time, cache memory (same unit)
};

struct BucketSet {
  std::string policy;
  std::vector<int64_t> boundaries;  // ascending; the last holds the longest length
  double padding_pct = 0;           // 100 * E[b(l) - l] / E[b(l)]
  double expected_latency = 0;      // E[T(b(l))]
  double objective = 0;
};

// Scores given boundaries (sorted and deduplicated here). Errors if the longest length has no bucket.
Result<BucketSet> evaluate_buckets(const LengthDistribution& d, std::vector<int64_t> boundaries, const BucketObjective& o,
                                   const std::string& policy);

// Multiples of `granularity` from the first one >= the shortest length up to the first one >= the
// longest (the candidate boundaries the optimizer chooses from).
std::vector<int64_t> candidate_boundaries(const LengthDistribution& d, int64_t granularity);

// The best set of at most `max_buckets` boundaries among `candidates` (which must reach the
// longest length). Dynamic programming; ties keep fewer buckets.
Result<BucketSet> optimize_buckets(const LengthDistribution& d, const std::vector<int64_t>& candidates, int max_buckets,
                                   const BucketObjective& o);
// The same by trying every subset (for tests; candidates <= 20).
Result<BucketSet> brute_force_buckets(const LengthDistribution& d, const std::vector<int64_t>& candidates, int max_buckets,
                                      const BucketObjective& o);

// Fixed policies: powers of two from `lowest` up to the longest length; every `step` tokens; one
// bucket at the longest length (rounded up to `granularity`).
std::vector<int64_t> pow2_boundaries(const LengthDistribution& d, int64_t lowest);
std::vector<int64_t> every_boundaries(const LengthDistribution& d, int64_t step);
std::vector<int64_t> single_boundary(const LengthDistribution& d, int64_t granularity);

}  // namespace tandem::buckets
