// /metrics: what the server has done, in Prometheus' text format (version 0.0.4): requests by
// endpoint and status, tokens, time, throughput, the queue and the slots, and a histogram of
// generation request latency.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "server/slot_engine.h"

namespace tandem::server {

class HttpMetrics {
 public:
  void count(const std::string& endpoint, int status);
  // A generation request's whole time (received -> last byte of the answer).
  void observe_latency(double seconds);
  // `preparing`: requests being parsed, rendered or tokenized (they hold no slot yet).
  std::string render(const EngineCounters& engine, int preparing) const;

  static constexpr std::array<double, 12> kLatencyBuckets = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::array<uint64_t, kLatencyBuckets.size()> buckets_{};
  uint64_t latency_count_ = 0;
  double latency_sum_ = 0;
};

}  // namespace tandem::server
