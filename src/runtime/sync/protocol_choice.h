// Which protocol a handoff class waits with, chosen by measurement (issue: fast sync never loses).
//
// HeteroInfer's fast sync wins when the waiter's sleep-then-poll beats the OS wake-up of a
// blocking wait. It loses when the poll steals the core the awaited work needs (a GPU emulated on
// the host's cores, as PoCL is), or when predictions are poor. So each handoff class (a kernel
// shape on a device) is measured both ways: the first waits alternate protocols until each has
// `probes` samples, then the class keeps the one with the lower mean wall time from submit to
// resume, and every `reprobe_every`-th wait of the class tries the other so a change (a build
// starting beside us, a device warming up) is seen. Polling also needs a free core at all:
// callers pass blocking-only for a device that computes on every host core.
//
// Thread-safe: device workers choose and record concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runtime/sync/sync_mode.h"

namespace tandem::sync {

class ProtocolChooser {
 public:
  struct Options {
    int probes = 3;           // samples of each protocol before choosing
    int reprobe_every = 32;   // then one wait in this many uses the protocol not chosen
    double fast_margin = 1.0; // fast must be at most this x blocking's mean to be chosen
  };
  ProtocolChooser();
  explicit ProtocolChooser(Options o);

  // The protocol for the next wait of `cls`.
  SyncMode choose(std::string_view cls);
  // How long that wait took (submit to resume, ns) with protocol `used`.
  void record(std::string_view cls, SyncMode used, int64_t wall_ns);

  struct ClassStats {
    uint64_t fast_samples = 0, blocking_samples = 0;
    double fast_mean_ns = 0, blocking_mean_ns = 0;
    uint64_t waits = 0;
    SyncMode preferred = SyncMode::kBlocking;
  };
  ClassStats stats(std::string_view cls) const;
  // Classes whose measured choice is the fast protocol / the blocking one.
  size_t classes_preferring(SyncMode m) const;

 private:
  struct Entry {
    ClassStats s;
  };
  static void add(double& mean, uint64_t& n, int64_t v);
  SyncMode preferred(const ClassStats& s) const;

  Options o_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> classes_;
};

}  // namespace tandem::sync
