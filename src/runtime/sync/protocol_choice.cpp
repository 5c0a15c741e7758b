#include "runtime/sync/protocol_choice.h"

namespace tandem::sync {

ProtocolChooser::ProtocolChooser() : ProtocolChooser(Options{}) {}
ProtocolChooser::ProtocolChooser(Options o) : o_(o) {}

void ProtocolChooser::add(double& mean, uint64_t& n, int64_t v) {
  // A running mean over the last few samples (weight 1/min(n, 8)): recent enough to follow load.
  ++n;
  const double w = 1.0 / double(n < 8 ? n : 8);
  mean += w * (double(v) - mean);
}

SyncMode ProtocolChooser::preferred(const ClassStats& s) const {
  if (s.fast_samples == 0 || s.blocking_samples == 0) return SyncMode::kBlocking;
  return s.fast_mean_ns <= o_.fast_margin * s.blocking_mean_ns ? SyncMode::kFast : SyncMode::kBlocking;
}

SyncMode ProtocolChooser::choose(std::string_view cls) {
  std::lock_guard<std::mutex> lock(mu_);
  ClassStats& s = classes_[std::string(cls)].s;
  const uint64_t wait = s.waits++;
  const uint64_t probes = uint64_t(o_.probes > 0 ? o_.probes : 1);
  if (s.fast_samples < probes || s.blocking_samples < probes) return wait % 2 == 0 ? SyncMode::kFast : SyncMode::kBlocking;
  const SyncMode best = preferred(s);
  const bool reprobe = o_.reprobe_every > 0 && wait % uint64_t(o_.reprobe_every) == 0;
  if (!reprobe) return best;
  return best == SyncMode::kFast ? SyncMode::kBlocking : SyncMode::kFast;
}

void ProtocolChooser::record(std::string_view cls, SyncMode used, int64_t wall_ns) {
  if (wall_ns < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  ClassStats& s = classes_[std::string(cls)].s;
  if (used == SyncMode::kFast) {
    add(s.fast_mean_ns, s.fast_samples, wall_ns);
  } else {
    add(s.blocking_mean_ns, s.blocking_samples, wall_ns);
  }
  s.preferred = preferred(s);
}

ProtocolChooser::ClassStats ProtocolChooser::stats(std::string_view cls) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = classes_.find(std::string(cls));
  return it == classes_.end() ? ClassStats{} : it->second.s;
}

size_t ProtocolChooser::classes_preferring(SyncMode m) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [k, e] : classes_) n += e.s.preferred == m && e.s.fast_samples > 0 && e.s.blocking_samples > 0;
  return n;
}

}  // namespace tandem::sync
