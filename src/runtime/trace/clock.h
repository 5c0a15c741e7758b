// Clocks for timelines. The real driver stamps events with the wall clock; the simulator stamps
// the same events with a virtual clock it advances itself ("one scheduler, two clocks").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tandem::trace {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since this clock's origin; never decreases.
  virtual int64_t now_ns() const = 0;
};

// std::chrono::steady_clock, with its origin at construction (so traces start near 0).
class WallClock final : public Clock {
 public:
  WallClock() : origin_(std::chrono::steady_clock::now()) {}
  int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
  }

 private:
  std::chrono::steady_clock::time_point origin_;
};

// Time moves only when its owner says so. Thread-safe; advance() and advance_to() never move it
// backward.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(int64_t start_ns = 0) : t_(start_ns) {}
  int64_t now_ns() const override { return t_.load(std::memory_order_acquire); }
  // Moves forward by dt_ns (negative: no-op); returns the new time.
  int64_t advance(int64_t dt_ns) {
    if (dt_ns <= 0) return now_ns();
    return t_.fetch_add(dt_ns, std::memory_order_acq_rel) + dt_ns;
  }
  // Moves forward to t_ns if it lies ahead; returns the new time.
  int64_t advance_to(int64_t t_ns) {
    int64_t cur = t_.load(std::memory_order_relaxed);
    while (cur < t_ns && !t_.compare_exchange_weak(cur, t_ns, std::memory_order_acq_rel)) {
    }
    return cur < t_ns ? t_ns : cur;
  }

 private:
  std::atomic<int64_t> t_;
};

}  // namespace tandem::trace
