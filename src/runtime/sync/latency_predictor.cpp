#include "runtime/sync/latency_predictor.h"

#include <algorithm>
#include <cmath>

namespace tandem::sync {

LatencyPredictor::LatencyPredictor(double alpha, double outlier_clip)
    : alpha_(std::clamp(alpha, 1e-6, 1.0)), clip_(outlier_clip <= 0 ? 0.0 : std::max(1.0, outlier_clip)) {}

std::string LatencyPredictor::int_key(uint64_t key) {
  std::string s(1, '#');  // (not "#" + to_string: GCC 12 raises a false -Wrestrict on it)
  s += std::to_string(key);
  return s;
}

void LatencyPredictor::observe(std::string_view key, int64_t duration_ns) {
  if (duration_ns < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) it = entries_.emplace(std::string(key), Entry{}).first;
  Entry& e = it->second;
  if (e.count == 0) {
    e.mean_ns = double(duration_ns);
    e.min_ns = e.max_ns = duration_ns;
  } else {
    double x = double(duration_ns);
    if (clip_ > 0) x = std::min(x, clip_ * e.mean_ns);
    e.mean_ns += alpha_ * (x - e.mean_ns);
    e.min_ns = std::min(e.min_ns, duration_ns);
    e.max_ns = std::max(e.max_ns, duration_ns);
  }
  e.last_ns = duration_ns;
  ++e.count;
}

void LatencyPredictor::observe(uint64_t key, int64_t duration_ns) { observe(int_key(key), duration_ns); }

std::optional<int64_t> LatencyPredictor::predict(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.count == 0) return std::nullopt;
  return int64_t(std::llround(it->second.mean_ns));
}

std::optional<int64_t> LatencyPredictor::predict(uint64_t key) const { return predict(int_key(key)); }

std::optional<LatencyPredictor::Entry> LatencyPredictor::entry(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

size_t LatencyPredictor::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void LatencyPredictor::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

}  // namespace tandem::sync
