// Predicts how long a kernel will run, from how long the same kernel ran before.
//
// All decoder blocks of a transformer look alike, so the FFN-down matmul of layer N+1 takes about
// what it took in layer N. The predictor keeps, per kernel key ("ffn_down@decode", or any
// integer id), an exponentially weighted mean of the observed durations: the first observation
// sets it, each later one moves it by `alpha` toward the new value (alpha = 1 means "exactly the
// previous layer"). The fast wait protocol sleeps for the prediction minus a margin.
//
// Durations are observed by whoever measured the kernel (the device worker that ran it), not by
// the waiter: a waiter that overslept would otherwise feed its own lateness back into the next
// prediction and drift upward.
//
// One preempted or cold kernel must not push the next prediction far out: over-predicting makes
// the waiter oversleep (latency), under-predicting only makes it poll a little longer (CPU). So an
// observation above outlier_clip x the current mean enters the mean as outlier_clip x mean; a real
// step up still gets through within a few layers (the mean can grow by alpha*(clip-1) per step).
//
// Thread-safe: device workers observe while sync threads predict.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tandem::sync {

class LatencyPredictor {
 public:
  struct Entry {
    double mean_ns = 0;    // exponentially weighted mean
    int64_t last_ns = 0;   // most recent observation
    int64_t min_ns = 0;
    int64_t max_ns = 0;
    uint64_t count = 0;
  };

  // alpha in (0, 1]; outlier_clip >= 1, or 0 to disable clipping.
  explicit LatencyPredictor(double alpha = 0.5, double outlier_clip = 2.0);

  double alpha() const { return alpha_; }
  double outlier_clip() const { return clip_; }

  // Records that kernel `key` ran for `duration_ns` (negative values are ignored).
  void observe(std::string_view key, int64_t duration_ns);
  void observe(uint64_t key, int64_t duration_ns);

  // The predicted duration, or nullopt for a key never observed.
  std::optional<int64_t> predict(std::string_view key) const;
  std::optional<int64_t> predict(uint64_t key) const;

  std::optional<Entry> entry(std::string_view key) const;
  size_t size() const;
  void clear();

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static std::string int_key(uint64_t key);

  double alpha_;
  double clip_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries_;
};

}  // namespace tandem::sync
