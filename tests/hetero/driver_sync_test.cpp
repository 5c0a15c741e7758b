// How the RealDriver waits under --sync fast: blocking on a device that computes on every host
// core (a poll would take the core it needs), and on a device with its own silicon a measured
// choice between polling and blocking per kernel shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runtime/real_driver.h"

namespace tandem {
namespace {

// A kernel that is done `ns` after the host first looks at it (ready() or wait()). The worker
// looks at completions in queue order, so the device still runs its queue in order; and however
// long a busy host keeps the worker from looking, every kernel is waited for, never found done:
// the counts below do not depend on the machine's load.
class TimedCompletion final : public devices::Completion {
 public:
  explicit TimedCompletion(int64_t ns) : ns_(ns) {}
  Status wait() override {
    std::this_thread::sleep_until(done_at());
    return Status::Ok();
  }
  bool ready() override { return std::chrono::steady_clock::now() >= done_at(); }
  double device_seconds() const override { return 0; }

 private:
  std::chrono::steady_clock::time_point done_at() {
    if (!looked_) {
      done_at_ = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns_);
      looked_ = true;
    }
    return done_at_;
  }
  int64_t ns_;
  bool looked_ = false;
  std::chrono::steady_clock::time_point done_at_{};
};

class TimedDevice final : public devices::Device {
 public:
  TimedDevice(bool on_host_cores, int64_t kernel_ns) : on_host_cores_(on_host_cores), kernel_ns_(kernel_ns) {}
  std::string name() const override { return "timed"; }
  devices::DeviceCaps caps() const override {
    devices::DeviceCaps c{devices::DeviceKind::kGpu, true, true, true, "timed kernels"};
    c.computes_on_host_cores = on_host_cores_;
    return c;
  }
  bool supports(const graph::OpCall&) const override { return true; }
  Result<std::unique_ptr<devices::Completion>> submit(const graph::OpCall&) override {
    return std::unique_ptr<devices::Completion>(new TimedCompletion(kernel_ns_));
  }

 private:
  bool on_host_cores_;
  int64_t kernel_ns_;
};

// A chain of n kernels of one shape on the device.
TaskGraph chain(int n) {
  TaskGraph g;
  static float x[64], y[64];
  for (int i = 0; i < n; ++i) {
    Task t;
    t.device = "gpu";
    graph::OpCall c;
    c.kind = graph::OpKind::kAdd;
    c.out = graph::Act{y, 1, 64, 64};
    c.a = graph::Act{x, 1, 64, 64};
    t.call = c;
    if (i > 0) t.deps = {i - 1};
    t.label = "add " + std::to_string(i);
    g.add(std::move(t));
  }
  return g;
}

TEST(DriverSync, ADeviceOnEveryHostCoreIsWaitedOnBlocking) {
  // 20 ms kernels: the worker may look at a kernel (starting its clock) and only wait for it a
  // scheduling delay later; under a loaded sanitizer run that delay passed 0.2 ms once, and the
  // kernel was found done instead of waited for.
  TimedDevice gpu(true, 20'000'000);
  RealDriver driver({{"gpu", &gpu}}, SyncMode::kFast);
  ASSERT_TRUE(driver.run(chain(12)).ok());
  EXPECT_EQ(driver.stats().fast_waits, 0u);
  // The chain is queued ahead at once; each kernel is waited for, blocking.
  EXPECT_EQ(driver.stats().blocking_no_free_core, 12u);
  EXPECT_EQ(driver.stats().found_complete, 0u);
}

TEST(DriverSync, ADeviceOfItsOwnGetsBothProtocolsProbedThenTheMeasuredOne) {
  TimedDevice gpu(false, 300'000);
  RealDriver driver({{"gpu", &gpu}}, SyncMode::kFast);
  ASSERT_TRUE(driver.run(chain(40)).ok());
  const DriverStats& s = driver.stats();
  EXPECT_EQ(s.blocking_no_free_core, 0u);
  EXPECT_EQ(s.fast_waits + s.blocking_by_choice, 40u);
  EXPECT_GE(s.fast_waits, 3u) << "the fast protocol was probed";
  EXPECT_GE(s.blocking_by_choice, 3u) << "the blocking protocol was probed";
}

TEST(DriverSync, PollingIsForcedOnlyWhenAsked) {
  TimedDevice gpu(true, 100'000);
  RealDriver driver({{"gpu", &gpu}}, SyncMode::kFast, /*poll_host_devices=*/true);
  ASSERT_TRUE(driver.run(chain(10)).ok());
  EXPECT_EQ(driver.stats().blocking_no_free_core, 0u);
  EXPECT_GT(driver.stats().fast_waits, 0u);
}

TEST(DriverSync, BlockingModeNeverPolls) {
  TimedDevice gpu(false, 100'000);
  RealDriver driver({{"gpu", &gpu}}, SyncMode::kBlocking);
  ASSERT_TRUE(driver.run(chain(10)).ok());
  EXPECT_EQ(driver.stats().fast_waits + driver.stats().blocking_by_choice + driver.stats().blocking_no_free_core, 0u);
}

}  // namespace
}  // namespace tandem
