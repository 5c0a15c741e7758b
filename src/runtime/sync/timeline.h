// A timeline semaphore: the "flag written next to the output tensor" of HeteroInfer's fast
// synchronization, shaped after IREE's timeline semaphores (iree/hal/semaphore.h).
//
// The semaphore holds one monotonic 64-bit payload. A producer (a device worker) advances it to
// N when its N-th kernel's output is ready; a waiter waits until the payload reaches the value it
// needs. Failure travels in the payload too: a failed kernel moves the semaphore to the terminal
// failed state (payload kFailedValue) with a Status, which wakes every waiter with that error
// instead of leaving it to hang on a value that will never come.
//
// The payload sits alone on its cache line, because waiters poll it while the producer writes it;
// the mutex and condition variable used by blocking waiters live on the next line.
//
// Waiting policies (blocking vs. sleep-then-poll) are in wait_policy.h; this class offers the two
// primitives they are made of: a lock-free query (for polling) and a blocking wait.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>

#include "core/status.h"

namespace tandem::sync {

inline constexpr size_t kCacheLine = 64;

// How a wait ended.
enum class WaitOutcome { kReached, kFailed, kTimedOut };
const char* to_string(WaitOutcome o);

class alignas(kCacheLine) TimelineSemaphore {
 public:
  // The payload of a failed semaphore: above every value a producer may signal.
  static constexpr uint64_t kFailedValue = ~uint64_t{0};
  static constexpr uint64_t kMaxValue = kFailedValue - 1;

  explicit TimelineSemaphore(uint64_t initial = 0);
  TimelineSemaphore(const TimelineSemaphore&) = delete;
  TimelineSemaphore& operator=(const TimelineSemaphore&) = delete;

  // The current payload (kFailedValue once failed). Acquire: a waiter that sees value >= N also
  // sees every write the producer made before signaling N (the output tensor).
  uint64_t query() const { return value_.load(std::memory_order_acquire); }
  bool failed() const { return query() == kFailedValue; }
  // True when a wait for `value` would return now (reached or failed).
  bool ready(uint64_t value) const { return query() >= value; }

  // Advances the payload to `value` (release) and wakes blocked waiters.
  // Errors: InvalidArgument if value is not above the current payload (the timeline is monotonic)
  // or is kFailedValue; the stored failure if the semaphore has already failed.
  Status signal(uint64_t value);

  // Moves the semaphore to the failed state with `error` (must not be ok) and wakes every waiter.
  // The first failure wins; later ones are ignored.
  void fail(Status error);

  // The failure, or Ok if the semaphore has not failed.
  Status failure() const;

  // Sleeps (condition variable) until the payload reaches `value`, the semaphore fails, or
  // `timeout` passes. This is the baseline protocol: the OS wakes the waiter.
  WaitOutcome wait_blocking(uint64_t value, std::chrono::nanoseconds timeout) const;

  // Number of threads currently blocked in wait_blocking (for tests and diagnostics).
  int blocked_waiters() const { return waiters_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_;
  // Everything below is touched only by blocking waiters and by signalers that find one.
  alignas(kCacheLine) mutable std::atomic<int> waiters_{0};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Status failure_;  // guarded by mu_; set once, before value_ becomes kFailedValue
};

static_assert(alignof(TimelineSemaphore) == kCacheLine);

}  // namespace tandem::sync
