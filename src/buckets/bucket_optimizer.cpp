#include "buckets/bucket_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace tandem::buckets {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Prefix sums over the distribution cut at the candidates: mass and mass * length of the lengths
// in (c[j-1], c[j]] (j = 0: up to c[0]).
struct Segments {
  std::vector<double> mass, length_mass;
  Segments(const LengthDistribution& d, const std::vector<int64_t>& c) : mass(c.size(), 0.0), length_mass(c.size(), 0.0) {
    size_t j = 0;
    for (auto [l, p] : d.points) {
      while (j < c.size() && c[j] < l) ++j;
      if (j == c.size()) break;
      mass[j] += p;
      length_mass[j] += p * double(l);
    }
  }
};

}  // namespace

Result<BucketSet> evaluate_buckets(const LengthDistribution& d, std::vector<int64_t> b, const BucketObjective& o,
                                   const std::string& policy) {
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  if (b.empty() || b.back() < d.max_length()) {
    return InvalidArgument("buckets (" + policy + "): no bucket holds the longest length " + std::to_string(d.max_length()));
  }
  BucketSet s;
  s.policy = policy;
  s.boundaries = b;
  double padded = 0, bucket_tokens = 0;
  size_t j = 0;
  for (auto [l, p] : d.points) {
    while (b[j] < l) ++j;
    s.expected_latency += p * o.latency(b[j]);
    padded += p * double(b[j] - l);
    bucket_tokens += p * double(b[j]);
  }
  s.padding_pct = bucket_tokens > 0 ? 100.0 * padded / bucket_tokens : 0.0;
  s.objective = s.expected_latency + o.padding_weight * padded + o.variant_weight * double(b.size());
  return s;
}

std::vector<int64_t> candidate_boundaries(const LengthDistribution& d, int64_t granularity) {
  std::vector<int64_t> c;
  for (int64_t b = round_up(d.min_length(), granularity); ; b += granularity) {
    c.push_back(b);
    if (b >= d.max_length()) break;
  }
  return c;
}

Result<BucketSet> optimize_buckets(const LengthDistribution& d, const std::vector<int64_t>& candidates, int max_buckets,
                                   const BucketObjective& o) {
  if (max_buckets < 1 || max_buckets > 256) return InvalidArgument("--count: " + std::to_string(max_buckets) + " must be in 1..256");
  std::vector<int64_t> c = candidates;
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  // Boundaries past the first one that holds the longest length only cost more.
  auto last = std::lower_bound(c.begin(), c.end(), d.max_length());
  if (last == c.end()) return InvalidArgument("buckets: no candidate boundary holds the longest length " + std::to_string(d.max_length()));
  c.erase(last + 1, c.end());
  const size_t m = c.size();
  const Segments seg(d, c);
  std::vector<double> mass_prefix(m + 1, 0.0), lmass_prefix(m + 1, 0.0);
  for (size_t i = 0; i < m; ++i) {
    mass_prefix[i + 1] = mass_prefix[i] + seg.mass[i];
    lmass_prefix[i + 1] = lmass_prefix[i] + seg.length_mass[i];
  }
  std::vector<double> T(m);
  for (size_t i = 0; i < m; ++i) T[i] = o.latency(c[i]);
  // Cost of one bucket at c[i] holding the lengths in (c[j], c[i]] (j = -1: everything up to c[i]).
  auto bucket_cost = [&](int j, size_t i) {
    const double mass = mass_prefix[i + 1] - mass_prefix[size_t(j + 1)];
    const double lmass = lmass_prefix[i + 1] - lmass_prefix[size_t(j + 1)];
    return mass * T[i] + o.padding_weight * (mass * double(c[i]) - lmass);
  };
  const double inf = std::numeric_limits<double>::infinity();
  const size_t K = std::min<size_t>(size_t(max_buckets), m);
  // best[k][i]: k buckets whose last boundary is c[i], covering every length <= c[i].
  std::vector<std::vector<double>> best(K + 1, std::vector<double>(m, inf));
  std::vector<std::vector<int>> prev(K + 1, std::vector<int>(m, -1));
  for (size_t i = 0; i < m; ++i) best[1][i] = bucket_cost(-1, i);
  for (size_t k = 2; k <= K; ++k)
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < i; ++j) {
        if (best[k - 1][j] == inf) continue;
        const double v = best[k - 1][j] + bucket_cost(int(j), i);
        if (v < best[k][i] * (1 - 1e-12)) {
          best[k][i] = v;
          prev[k][i] = int(j);
        }
      }
  size_t best_k = 1;
  for (size_t k = 1; k <= K; ++k) {
    const double a = best[k][m - 1] + o.variant_weight * double(k);
    const double b = best[best_k][m - 1] + o.variant_weight * double(best_k);
    if (a < b * (1 - 1e-12)) best_k = k;
  }
  std::vector<int64_t> chosen;
  for (int i = int(m - 1), k = int(best_k); i >= 0 && k >= 1; i = prev[size_t(k)][size_t(i)], --k) chosen.push_back(c[size_t(i)]);
  std::reverse(chosen.begin(), chosen.end());
  return evaluate_buckets(d, chosen, o, "optimized");
}

Result<BucketSet> brute_force_buckets(const LengthDistribution& d, const std::vector<int64_t>& candidates, int max_buckets,
                                      const BucketObjective& o) {
  if (candidates.size() > 20) return InvalidArgument("brute force: at most 20 candidates");
  std::vector<int64_t> c = candidates;
  std::sort(c.begin(), c.end());
  std::optional<BucketSet> best;
  for (uint32_t mask = 1; mask < (1u << c.size()); ++mask) {
    std::vector<int64_t> b;
    for (size_t i = 0; i < c.size(); ++i)
      if (mask & (1u << i)) b.push_back(c[i]);
    if (int(b.size()) > max_buckets || b.back() < d.max_length()) continue;
    auto s = evaluate_buckets(d, b, o, "brute force");
    if (!s.ok()) continue;
    if (!best || s->objective < best->objective * (1 - 1e-12)) best = *s;
  }
  if (!best) return InvalidArgument("brute force: no subset holds the longest length");
  return *best;
}

std::vector<int64_t> pow2_boundaries(const LengthDistribution& d, int64_t lowest) {
  std::vector<int64_t> b;
  for (int64_t v = std::max<int64_t>(1, lowest); ; v *= 2) {
    if (v >= d.min_length() || !b.empty()) b.push_back(v);
    if (v >= d.max_length()) break;
  }
  return b;
}

std::vector<int64_t> every_boundaries(const LengthDistribution& d, int64_t step) {
  std::vector<int64_t> b;
  for (int64_t v = step; ; v += step) {
    if (v >= d.min_length()) b.push_back(v);
    if (v >= d.max_length()) break;
  }
  return b;
}

std::vector<int64_t> single_boundary(const LengthDistribution& d, int64_t granularity) {
  return {round_up(d.max_length(), granularity)};
}

}  // namespace tandem::buckets
