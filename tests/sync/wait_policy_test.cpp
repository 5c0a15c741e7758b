#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/sync/wait_policy.h"

namespace tandem::sync {
namespace {

using namespace std::chrono_literals;

FastWaitParams test_params() {
  FastWaitParams p;
  p.sleep_granularity_ns = 60'000;
  p.margin_frac = 0.05;
  p.margin_ns = 10'000;
  p.poll_cap_ns = 50'000;
  p.poll_cap_frac = 0.25;
  return p;
}

// ---------------------------------------------------------------------------------------------
// Pure decisions.

TEST(FastDecision, SleepsPredictedMinusMarginThenPolls) {
  const FastWaitParams p = test_params();
  const int64_t pred = 500'000;
  const int64_t target = fast_wake_target_ns(p, pred);
  EXPECT_EQ(target, 500'000 - 25'000 - 10'000);

  FastDecision d = decide_fast_wait(p, pred, 0, 0);
  EXPECT_EQ(d.action, FastAction::kSleep);
  EXPECT_EQ(d.duration_ns, target - p.sleep_granularity_ns) << "request + overshoot lands on the target";
  EXPECT_LT(d.duration_ns + p.sleep_granularity_ns, pred) << "wakes before the predicted completion";

  // Later into the kernel, the sleep is shorter by exactly the elapsed time.
  FastDecision d2 = decide_fast_wait(p, pred, 100'000, 0);
  EXPECT_EQ(d2.action, FastAction::kSleep);
  EXPECT_EQ(d2.duration_ns, d.duration_ns - 100'000);

  // Closer to the target than one sleep's overshoot: poll, through the predicted completion and
  // then for the overrun cap.
  const int64_t e3 = target - p.sleep_granularity_ns + 1;
  FastDecision d3 = decide_fast_wait(p, pred, e3, 0);
  EXPECT_EQ(d3.action, FastAction::kPoll);
  EXPECT_EQ(fast_poll_cap_ns(p, pred), 125'000);
  EXPECT_EQ(d3.duration_ns, (pred - e3) + 125'000);

  // Once polling has begun it never goes back to sleep, and the budget shrinks.
  FastDecision d4 = decide_fast_wait(p, pred, target, 40'000);
  EXPECT_EQ(d4.action, FastAction::kPoll);
  EXPECT_EQ(d4.duration_ns, (pred - (target - 40'000)) + 125'000 - 40'000);
}

TEST(FastDecision, FallsBackToBlockingWhenPollBudgetIsSpent) {
  const FastWaitParams p = test_params();
  const int64_t pred = 100'000;  // the prediction says 100 us; the kernel is still running later
  EXPECT_EQ(fast_poll_cap_ns(p, pred), 50'000) << "the absolute cap dominates for short kernels";
  const int64_t poll_start = 80'000;
  const int64_t budget = (pred - poll_start) + 50'000;
  EXPECT_EQ(decide_fast_wait(p, pred, poll_start + budget, budget).action, FastAction::kBlock);
  EXPECT_EQ(decide_fast_wait(p, pred, poll_start + budget + 1, budget + 1).action, FastAction::kBlock);
  EXPECT_EQ(decide_fast_wait(p, pred, poll_start + budget - 1, budget - 1).action, FastAction::kPoll);
  // Polling that began after the predicted completion gets just the cap.
  EXPECT_EQ(decide_fast_wait(p, pred, 300'000, 50'000).action, FastAction::kBlock);
}

TEST(FastDecision, ShortOrUnknownKernelsPollImmediately) {
  const FastWaitParams p = test_params();
  EXPECT_EQ(decide_fast_wait(p, 50'000, 0, 0).action, FastAction::kPoll) << "50 us < one sleep's overshoot";
  EXPECT_EQ(decide_fast_wait(p, 50'000, 0, 0).duration_ns, 50'000 + p.poll_cap_ns) << "polls through the kernel";
  EXPECT_EQ(decide_fast_wait(p, 0, 0, 0).action, FastAction::kPoll) << "no prediction yet";
  EXPECT_EQ(decide_fast_wait(p, -1, 0, 0).action, FastAction::kPoll);
  EXPECT_EQ(decide_fast_wait(p, 0, 0, p.poll_cap_ns).action, FastAction::kBlock);
  EXPECT_EQ(fast_wake_target_ns(p, 5'000), 0) << "margin larger than the kernel clamps at 0";
}

TEST(FastDecision, GranularityParameterMatters) {
  FastWaitParams phone = test_params();
  phone.sleep_granularity_ns = 100'000;  // SEEDS SYNC: usleep 80-100 us on the phone
  FastWaitParams host = test_params();
  host.sleep_granularity_ns = 5'000;
  // A 100 us kernel (wake target 85 us): worth a sleep on a fine-grained host, not on the phone.
  EXPECT_EQ(decide_fast_wait(host, 100'000, 0, 0).action, FastAction::kSleep);
  EXPECT_EQ(decide_fast_wait(phone, 100'000, 0, 0).action, FastAction::kPoll);
}

// ---------------------------------------------------------------------------------------------
// Virtual-time replay (what the simulator runs).

TEST(FastReplay, AccuratePredictionResumesRightAfterCompletion) {
  const FastWaitParams p = test_params();
  ReplayCosts c;
  c.sleep_overshoot_ns = p.sleep_granularity_ns;
  c.poll_interval_ns = 100;
  c.block_wake_ns = 50'000;
  const int64_t actual = 500'000;
  ReplayResult fast = replay_fast_wait(p, actual, actual, c);
  EXPECT_FALSE(fast.fell_back);
  EXPECT_EQ(fast.sleeps, 1);
  EXPECT_GE(fast.resume_ns, actual);
  EXPECT_LT(fast.resume_ns, actual + c.poll_interval_ns + 1);
  EXPECT_GT(fast.polled_ns, 0);
  EXPECT_LT(fast.polled_ns, fast.slept_ns) << "most of the wait is spent asleep";

  ReplayResult blocking = replay_blocking_wait(actual, c);
  EXPECT_EQ(blocking.resume_ns, actual + c.block_wake_ns);
  EXPECT_LT(fast.resume_ns, blocking.resume_ns);
}

TEST(FastReplay, UnderPredictionFallsBackAndNeverHangs) {
  const FastWaitParams p = test_params();
  ReplayCosts c;
  c.sleep_overshoot_ns = p.sleep_granularity_ns;
  ReplayResult r = replay_fast_wait(p, 200'000, 10'000'000, c);
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(r.resume_ns, 10'000'000 + c.block_wake_ns);
  EXPECT_EQ(r.polled_ns, (200'000 - fast_wake_target_ns(p, 200'000)) + fast_poll_cap_ns(p, 200'000))
      << "polling stops at the cap past the predicted completion";
}

TEST(FastReplay, OverPredictionOversleepsButResumesAfterCompletion) {
  const FastWaitParams p = test_params();
  ReplayCosts c;
  c.sleep_overshoot_ns = p.sleep_granularity_ns;
  ReplayResult r = replay_fast_wait(p, 2'000'000, 100'000, c);
  EXPECT_FALSE(r.fell_back);
  EXPECT_EQ(r.polled_ns, 0);
  EXPECT_EQ(r.resume_ns, fast_wake_target_ns(p, 2'000'000)) << "wakes at the target and sees the flag";
}

TEST(FastReplay, NeverResumesBeforeCompletion) {
  const FastWaitParams p = test_params();
  ReplayCosts c;
  for (int64_t overshoot : {0, 20'000, 100'000}) {
    c.sleep_overshoot_ns = overshoot;
    for (int64_t pred : {0, 10'000, 50'000, 200'000, 500'000, 5'000'000}) {
      for (int64_t actual : {0, 1, 30'000, 150'000, 480'000, 600'000, 4'000'000}) {
        ReplayResult r = replay_fast_wait(p, pred, actual, c);
        EXPECT_GE(r.resume_ns, actual) << "pred " << pred << " actual " << actual;
        EXPECT_GE(replay_blocking_wait(actual, c).resume_ns, actual);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The real wait loop (the one the driver runs on a device's completion).

// A kernel's completion as the loop sees it: a flag a producer thread sets, and a blocking wait
// on it (a condition variable, as a driver's blocking wait sleeps in the OS).
class Flag final : public Awaitable {
 public:
  bool ready() const override { return set_.load(std::memory_order_acquire); }
  bool block_until(int64_t deadline_ns) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++blocked_;
    const bool reached = cv_.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns)),
                                        [&] { return ready(); });
    --blocked_;
    return reached;
  }
  void set() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      set_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
  }
  // Spins until a thread is blocked on the flag, or gives up after 2 s (so a loop that never
  // blocks fails the test's expectations instead of hanging it).
  bool await_blocked_waiter() {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (blocked_ > 0) return true;
      }
      if (std::chrono::steady_clock::now() > give_up) return false;
      std::this_thread::yield();
    }
  }

 private:
  std::atomic<bool> set_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int blocked_ = 0;
};

// The loop never returns before the producer's signal and sees everything written before it.
// Predictions: right, too short, too long, unknown.
TEST(FastWaitLoop, ReturnsOnlyAfterTheKernelIsDone) {
  for (int64_t pred : {300'000, 20'000, 3'000'000, 0}) {
    for (int rep = 0; rep < 3; ++rep) {
      Flag done;
      std::atomic<bool> signaled{false};
      int output = 0;
      const int64_t start = now_ns();
      std::thread producer([&] {
        while (now_ns() - start < 300'000) cpu_relax();  // a 300 us "kernel"
        output = rep + 1;
        signaled.store(true);
        done.set();
      });
      WaitStats st;
      const LoopEnd end = fast_wait_loop(test_params(), done, start, pred, start + 3'000'000'000, &st);
      EXPECT_LT(now_ns() - start, 2'000'000'000) << "woken by the deadline, not the signal";
      EXPECT_EQ(end, LoopEnd::kReady);
      EXPECT_TRUE(signaled.load()) << "returned before the signal (pred " << pred << ")";
      EXPECT_EQ(output, rep + 1);
      producer.join();
    }
  }
}

TEST(FastWaitLoop, AlreadyDoneReturnsAtOnce) {
  Flag done;
  done.set();
  WaitStats st;
  // A one-second prediction would sleep a second if the loop did not look first.
  EXPECT_EQ(fast_wait_loop(test_params(), done, now_ns(), 1'000'000'000, now_ns() + 3'000'000'000, &st), LoopEnd::kReady);
  EXPECT_EQ(st.sleeps, 0);
  EXPECT_EQ(st.polls, 0u);
}

TEST(FastWaitLoop, TimesOutInsteadOfHanging) {
  Flag never;
  WaitStats st;
  const int64_t start = now_ns();
  EXPECT_EQ(fast_wait_loop(test_params(), never, start, 100'000, start + 20'000'000, &st), LoopEnd::kTimedOut);
  EXPECT_LT(now_ns() - start, 2'000'000'000);
}

TEST(FastWaitLoop, BadlyWrongPredictionFallsBackToBlocking) {
  Flag done;
  std::thread producer([&] {
    // Signals only after the waiter gave up polling and blocked: deterministic fallback.
    EXPECT_TRUE(done.await_blocked_waiter());
    done.set();
  });
  WaitStats st;
  const int64_t start = now_ns();
  EXPECT_EQ(fast_wait_loop(test_params(), done, start, 100'000, start + 3'000'000'000, &st), LoopEnd::kReady);
  EXPECT_LT(now_ns() - start, 2'000'000'000) << "woken by the deadline, not the signal";
  producer.join();
  EXPECT_TRUE(st.fell_back);
  EXPECT_GT(st.polls, 0u) << "polled before falling back";
}

TEST(FastWaitLoop, SleepsThenPollsForALongKernel) {
  FastWaitParams p = test_params();
  p.sleep_granularity_ns = 1'000;
  Flag done;
  const int64_t start = now_ns();
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    done.set();
  });
  WaitStats st;
  EXPECT_EQ(fast_wait_loop(p, done, start, 20'000'000, start + 10'000'000'000, &st), LoopEnd::kReady);
  producer.join();
  EXPECT_GE(st.sleeps, 1) << "a 20 ms prediction is slept, not spun";
}

TEST(SleepCalibration, ReportsOrderedPercentiles) {
  SleepCalibration c = calibrate_sleep(10, 1'000);
  EXPECT_EQ(c.samples, 10);
  EXPECT_LE(c.min_overshoot_ns, c.p50_overshoot_ns);
  EXPECT_LE(c.p50_overshoot_ns, c.p90_overshoot_ns);
  EXPECT_EQ(calibrate_sleep(0).samples, 0);
}

}  // namespace
}  // namespace tandem::sync
