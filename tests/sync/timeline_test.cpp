#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/sync/timeline.h"

namespace tandem::sync {
namespace {

using namespace std::chrono_literals;

// Spins until a thread is blocked in sem's condition variable, or gives up after 2 s (so a bug
// that never blocks fails the test's expectations instead of hanging it).
bool await_blocked_waiters(const TimelineSemaphore& sem, int n = 1) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (sem.blocked_waiters() < n) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(Timeline, CacheLineAligned) {
  EXPECT_EQ(alignof(TimelineSemaphore), kCacheLine);
  TimelineSemaphore s[2];
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&s[0]) % kCacheLine, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&s[1]) % kCacheLine, 0u);
}

TEST(Timeline, MonotonicSignal) {
  TimelineSemaphore s(3);
  EXPECT_EQ(s.query(), 3u);
  EXPECT_FALSE(s.ready(4));
  EXPECT_TRUE(s.ready(3));
  ASSERT_TRUE(s.signal(5).ok());
  EXPECT_EQ(s.query(), 5u);
  EXPECT_TRUE(s.ready(4));

  Status back = s.signal(4);
  EXPECT_EQ(back.code(), StatusCode::kInvalidArgument);
  Status same = s.signal(5);
  EXPECT_EQ(same.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.query(), 5u) << "a rejected signal must not move the payload";

  EXPECT_EQ(s.signal(TimelineSemaphore::kFailedValue).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(s.failed());
  ASSERT_TRUE(s.signal(TimelineSemaphore::kMaxValue).ok());
  EXPECT_FALSE(s.failed());
}

TEST(Timeline, ConcurrentSignalersNeverGoBackward) {
  TimelineSemaphore s;
  std::atomic<bool> backward{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (last < 2000) {
      const uint64_t v = s.query();
      if (v < last) backward = true;
      last = v;
    }
  });
  std::thread a([&] { for (uint64_t v = 1; v <= 2000; v += 2) (void)s.signal(v); });
  std::thread b([&] { for (uint64_t v = 2; v <= 2000; v += 2) (void)s.signal(v); });
  a.join();
  b.join();
  reader.join();
  EXPECT_FALSE(backward);
  EXPECT_EQ(s.query(), 2000u);
}

TEST(Timeline, BlockingWaitReturnsAfterSignalWithData) {
  TimelineSemaphore s;
  int payload = 0;  // the "output tensor", written before the signal
  std::thread producer([&] {
    EXPECT_TRUE(await_blocked_waiters(s));
    payload = 42;
    ASSERT_TRUE(s.signal(1).ok());
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(s.wait_blocking(1, 3s), WaitOutcome::kReached);
  // A lost wake-up would still end "reached" at the deadline; require the signal to have woken it.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "woken by the deadline, not the signal";
  EXPECT_EQ(payload, 42);
  producer.join();
  EXPECT_EQ(s.blocked_waiters(), 0);
}

TEST(Timeline, BlockingWaitTimesOut) {
  TimelineSemaphore s;
  EXPECT_EQ(s.wait_blocking(1, 5ms), WaitOutcome::kTimedOut);
  EXPECT_EQ(s.wait_blocking(0, 0ms), WaitOutcome::kReached);
}

TEST(Timeline, FailureWakesBlockedWaitersWithError) {
  TimelineSemaphore s;
  std::atomic<int> failed_waiters{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      if (s.wait_blocking(7, 10s) == WaitOutcome::kFailed) failed_waiters++;
    });
  }
  EXPECT_TRUE(await_blocked_waiters(s, 3));
  s.fail(Internal("npu: kernel ffn_down crashed"));
  for (auto& t : waiters) t.join();
  EXPECT_EQ(failed_waiters.load(), 3);
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.failure().code(), StatusCode::kInternal);
  EXPECT_EQ(s.failure().message(), "npu: kernel ffn_down crashed");
}

TEST(Timeline, FailureIsTerminalAndFirstWins) {
  TimelineSemaphore s;
  EXPECT_TRUE(s.failure().ok());
  s.fail(IoError("first"));
  s.fail(Internal("second"));
  EXPECT_EQ(s.failure().message(), "first");
  Status after = s.signal(1);
  EXPECT_EQ(after.code(), StatusCode::kIoError) << "signal on a failed timeline reports the failure";
  EXPECT_EQ(s.query(), TimelineSemaphore::kFailedValue);
  EXPECT_EQ(s.wait_blocking(1, 0ms), WaitOutcome::kFailed);
}

TEST(Timeline, FailWithOkStatusStillFails) {
  TimelineSemaphore s;
  s.fail(Status::Ok());
  EXPECT_TRUE(s.failed());
  EXPECT_FALSE(s.failure().ok());
}

}  // namespace
}  // namespace tandem::sync
