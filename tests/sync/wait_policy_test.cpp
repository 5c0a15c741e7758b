#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "runtime/sync/wait_policy.h"

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
// Real waiters.

std::unique_ptr<WaitPolicy> policy(const char* name) {
  auto r = make_wait_policy(name, test_params());
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

TEST(WaitPolicy, Factory) {
  EXPECT_EQ(policy("blocking")->name(), "blocking");
  EXPECT_EQ(policy("fast")->name(), "fast");
  EXPECT_EQ(make_wait_policy("spin").status().code(), StatusCode::kInvalidArgument);
}

class BothPolicies : public ::testing::TestWithParam<const char*> {};

// The waiter must never return kReached before the producer's signal, and must see everything the
// producer wrote before it. Predictions: right, too short, too long, unknown.
TEST_P(BothPolicies, ReturnsOnlyAfterSignal) {
  auto pol = policy(GetParam());
  for (int64_t pred : {300'000, 20'000, 3'000'000, 0}) {
    for (int rep = 0; rep < 3; ++rep) {
      TimelineSemaphore sem;
      std::atomic<bool> signaled{false};
      int output = 0;
      const int64_t start = now_ns();
      std::thread producer([&] {
        while (now_ns() - start < 300'000) cpu_relax();  // a 300 us "kernel"
        output = rep + 1;
        signaled.store(true);
        ASSERT_TRUE(sem.signal(1).ok());
      });
      WaitRequest req;
      req.value = 1;
      req.kernel_start_ns = start;
      req.predicted_ns = pred;
      req.timeout = 3s;
      WaitResult r = pol->wait(sem, req);
      EXPECT_LT(now_ns() - start, 2'000'000'000) << "woken by the deadline, not the signal";
      EXPECT_EQ(r.outcome, WaitOutcome::kReached) << r.status.message();
      EXPECT_TRUE(r.status.ok());
      EXPECT_TRUE(signaled.load()) << "returned before the signal (pred " << pred << ")";
      EXPECT_EQ(output, rep + 1);
      producer.join();
    }
  }
}

TEST_P(BothPolicies, AlreadySignaledReturnsImmediately) {
  auto pol = policy(GetParam());
  TimelineSemaphore sem(5);
  WaitRequest req;
  req.value = 3;
  req.predicted_ns = 1'000'000'000;  // would sleep a second if it did not check first
  WaitResult r = pol->wait(sem, req);
  EXPECT_EQ(r.outcome, WaitOutcome::kReached);
  EXPECT_EQ(r.stats.sleeps, 0);
  EXPECT_EQ(r.stats.polls, 0u);
}

TEST_P(BothPolicies, TimesOutInsteadOfHanging) {
  auto pol = policy(GetParam());
  TimelineSemaphore sem;
  WaitRequest req;
  req.value = 1;
  req.predicted_ns = 100'000;
  req.timeout = 20ms;
  WaitResult r = pol->wait(sem, req);
  EXPECT_EQ(r.outcome, WaitOutcome::kTimedOut);
  EXPECT_EQ(r.status.code(), StatusCode::kOutOfRange);
}

TEST_P(BothPolicies, FailureWakesWaiterWithTheError) {
  auto pol = policy(GetParam());
  TimelineSemaphore sem;
  std::thread producer([&] {
    // Fail only once the waiter is asleep in the blocking path (fast falls back there after its
    // poll budget), so the wake-up path is what is tested.
    EXPECT_TRUE(await_blocked_waiters(sem));
    sem.fail(Internal("npu: graph execution failed"));
  });
  WaitRequest req;
  req.value = 1;
  req.predicted_ns = 0;
  req.timeout = 3s;
  const int64_t start = now_ns();
  WaitResult r = pol->wait(sem, req);
  EXPECT_LT(now_ns() - start, 2'000'000'000) << "woken by the deadline, not the failure";
  producer.join();
  EXPECT_EQ(r.outcome, WaitOutcome::kFailed);
  EXPECT_EQ(r.status.code(), StatusCode::kInternal);
  EXPECT_EQ(r.status.message(), "npu: graph execution failed");
  EXPECT_TRUE(r.stats.fell_back);
}

TEST_P(BothPolicies, AlreadyFailedReturnsTheError) {
  auto pol = policy(GetParam());
  TimelineSemaphore sem;
  sem.fail(Unsupported("gpu: lost device"));
  WaitRequest req;
  req.value = 1;
  WaitResult r = pol->wait(sem, req);
  EXPECT_EQ(r.outcome, WaitOutcome::kFailed);
  EXPECT_EQ(r.status.code(), StatusCode::kUnsupported);
}

INSTANTIATE_TEST_SUITE_P(Sync, BothPolicies, ::testing::Values("blocking", "fast"));

TEST(FastWait, BadlyWrongPredictionFallsBackToBlocking) {
  FastWait fast(test_params());
  TimelineSemaphore sem;
  std::thread producer([&] {
    // Signals only after the waiter gave up polling and blocked: deterministic fallback.
    EXPECT_TRUE(await_blocked_waiters(sem));
    ASSERT_TRUE(sem.signal(1).ok());
  });
  WaitRequest req;
  req.value = 1;
  req.predicted_ns = 100'000;
  req.timeout = 3s;
  const int64_t start = now_ns();
  WaitResult r = fast.wait(sem, req);
  EXPECT_LT(now_ns() - start, 2'000'000'000) << "woken by the deadline, not the signal";
  producer.join();
  EXPECT_EQ(r.outcome, WaitOutcome::kReached);
  EXPECT_TRUE(r.stats.fell_back);
  EXPECT_GT(r.stats.polls, 0u) << "polled before falling back";
}

TEST(FastWait, SleepsThenPollsForALongKernel) {
  FastWaitParams p = test_params();
  p.sleep_granularity_ns = 1'000;
  FastWait fast(p);
  TimelineSemaphore sem;
  const int64_t start = now_ns();
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(sem.signal(1).ok());
  });
  WaitRequest req;
  req.value = 1;
  req.kernel_start_ns = start;
  req.predicted_ns = 20'000'000;
  req.timeout = 10s;
  WaitResult r = fast.wait(sem, req);
  producer.join();
  EXPECT_EQ(r.outcome, WaitOutcome::kReached);
  EXPECT_GE(r.stats.sleeps, 1) << "a 20 ms prediction is slept, not spun";
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
