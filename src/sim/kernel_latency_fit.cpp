// Fitting a unit's kernel latency model (fixed + per byte + per FLOP) to its profile points.
#include <algorithm>
#include <array>
#include <cmath>

#include "sim/soc_model.h"

namespace tandem::sim {

double ProfilePoint::seconds_on(const std::string& unit) const {
  auto it = seconds.find(unit);
  return it == seconds.end() ? 0.0 : it->second;
}

double ProfilePoint::weight_bytes() const { return double(out) * double(in) * 18.0 / 32.0; }
double ProfilePoint::activation_bytes() const { return double(n) * double(in + out) * 2.0; }

namespace {

// Least squares on relative error over the coefficients in `use` (fixed, s/byte, s/flop); the
// others stay 0. Columns are scaled to O(1) (us, MB, GFLOP) for a well-conditioned solve.
// Returns false if the normal equations are singular; *sse gets the sum of squared errors.
bool solve_subset(const std::vector<ProfilePoint>& points, const std::string& unit, const std::array<bool, 3>& use,
                  std::array<double, 3>* coef, double* sse) {
  std::vector<int> cols;
  for (int i = 0; i < 3; ++i)
    if (use[size_t(i)]) cols.push_back(i);
  const size_t k = cols.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));  // [A^T A | A^T b]
  auto row_of = [&unit](const ProfilePoint& p) {
    const double t = p.seconds_on(unit) * 1e6;
    return std::array<double, 3>{1.0 / t, (p.weight_bytes() + p.activation_bytes()) / 1e6 / t, p.flops() / 1e9 / t};
  };
  for (const ProfilePoint& p : points) {
    const auto row = row_of(p);
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < k; ++j) m[i][j] += row[size_t(cols[i])] * row[size_t(cols[j])];
      m[i][k] += row[size_t(cols[i])];
    }
  }
  for (size_t c = 0; c < k; ++c) {  // Gauss-Jordan with partial pivoting
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    std::swap(m[c], m[piv]);
    if (std::abs(m[c][c]) < 1e-300) return false;
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (size_t q = c; q <= k; ++q) m[r][q] -= f * m[c][q];
    }
  }
  *coef = {0, 0, 0};
  for (size_t i = 0; i < k; ++i) (*coef)[size_t(cols[i])] = m[i][k] / m[i][i];
  *sse = 0;
  for (const ProfilePoint& p : points) {
    const auto row = row_of(p);
    double pred = 0;
    for (int i = 0; i < 3; ++i) pred += row[size_t(i)] * (*coef)[size_t(i)];
    *sse += (pred - 1.0) * (pred - 1.0);
  }
  return true;
}

}  // namespace

Result<KernelLatencyModel> fit_kernel_latency(const std::vector<ProfilePoint>& points, const std::string& unit) {
  if (points.size() < 3) {
    return InvalidArgument(unit + " latency fit: needs at least 3 profile points, got " +
                           std::to_string(points.size()));
  }
  for (const ProfilePoint& p : points)
    if (!(p.seconds_on(unit) > 0))
      return InvalidArgument(unit + " latency fit: a profile point has no time on " + unit);
  // Minimize sum ((model(p) - t_p) / t_p)^2: every point counts by its relative error, so the short
  // decode kernels weigh as much as the long prefill ones. Latency cannot have a negative term, so
  // this is non-negative least squares: the best fit over the subsets of terms whose coefficients
  // all come out positive (the full model first; a machine whose points show no fixed cost, say,
  // gets none). Bytes or FLOPs must be in it.
  double best_sse = INFINITY;
  std::array<double, 3> best{};
  for (int mask = 7; mask >= 2; --mask) {
    const std::array<bool, 3> use = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    if (!use[1] && !use[2]) continue;
    std::array<double, 3> coef{};
    double sse = 0;
    if (!solve_subset(points, unit, use, &coef, &sse)) continue;
    bool positive = true;
    for (int i = 0; i < 3; ++i)
      if (use[size_t(i)] && !(coef[size_t(i)] > 0)) positive = false;
    if (positive && sse < best_sse * (1 - 1e-12)) {
      best_sse = sse;
      best = coef;
    }
  }
  if (!std::isfinite(best_sse)) {
    return InvalidArgument(unit + " latency fit: the profile points give no model with positive byte or FLOP cost");
  }
  KernelLatencyModel g;
  g.fixed_s = best[0] * 1e-6;
  g.s_per_byte = best[1] * 1e-6 / 1e6;
  g.s_per_flop = best[2] * 1e-6 / 1e9;
  return g;
}

Status SocModel::fit_kernel_units() {
  for (ComputeUnit& u : units) {
    if (u.static_graphs()) continue;
    auto& g = u.kernels;
    auto fit = fit_kernel_latency(profile_points, u.name);
    if (!fit.ok()) return InvalidArgument(file + ": " + fit.status().message());
    g.matmul = *fit;
    g.matmul.s_per_flop /= g.profile_scale;
    // The FLOP term may not promise more than the unit achieves (SEEDS GPU-1).
    g.matmul.s_per_flop = std::max(g.matmul.s_per_flop, 1.0 / g.achieved_flops);
  }
  return Status::Ok();
}

}  // namespace tandem::sim
