#include "runtime/sync/timeline.h"

#include <string>
#include <utility>

namespace tandem::sync {

const char* to_string(WaitOutcome o) {
  switch (o) {
    case WaitOutcome::kReached: return "reached";
    case WaitOutcome::kFailed: return "failed";
    case WaitOutcome::kTimedOut: return "timed_out";
  }
  return "?";
}

TimelineSemaphore::TimelineSemaphore(uint64_t initial) : value_(initial > kMaxValue ? kMaxValue : initial) {}

// The waiter count and the payload form a Dekker pair (both seq_cst): a signaler that stores the
// payload and then reads waiters_ == 0 is guaranteed that any waiter which has not yet been
// counted will read the new payload, so the uncontended signal takes no lock.
Status TimelineSemaphore::signal(uint64_t value) {
  if (value == kFailedValue) return InvalidArgument("sync: kFailedValue cannot be signaled; use fail()");
  uint64_t cur = value_.load(std::memory_order_relaxed);
  do {
    if (cur == kFailedValue) return failure();
    if (value <= cur) {
      return InvalidArgument("sync: timeline is monotonic: signal(" + std::to_string(value) +
                             ") at payload " + std::to_string(cur));
    }
  } while (!value_.compare_exchange_weak(cur, value, std::memory_order_seq_cst, std::memory_order_relaxed));
  if (waiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mu_);  // orders the store before a waiter's predicate check
    cv_.notify_all();
  }
  return Status::Ok();
}

void TimelineSemaphore::fail(Status error) {
  if (error.ok()) error = Internal("sync: fail() called with an ok status");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (value_.load(std::memory_order_relaxed) == kFailedValue) return;  // first failure wins
    failure_ = std::move(error);
    value_.store(kFailedValue, std::memory_order_seq_cst);
  }
  cv_.notify_all();
}

Status TimelineSemaphore::failure() const {
  if (value_.load(std::memory_order_acquire) != kFailedValue) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

WaitOutcome TimelineSemaphore::wait_blocking(uint64_t value, std::chrono::nanoseconds timeout) const {
  auto outcome = [&](uint64_t v) { return v == kFailedValue ? WaitOutcome::kFailed : WaitOutcome::kReached; };
  uint64_t v = value_.load(std::memory_order_acquire);
  if (v >= value) return outcome(v);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  std::unique_lock<std::mutex> lock(mu_);
  bool reached = cv_.wait_until(lock, deadline, [&] { return value_.load(std::memory_order_seq_cst) >= value; });
  lock.unlock();
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  if (!reached) return WaitOutcome::kTimedOut;
  return outcome(value_.load(std::memory_order_acquire));
}

}  // namespace tandem::sync
