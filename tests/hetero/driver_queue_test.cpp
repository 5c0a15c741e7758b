// Queue-ahead in the RealDriver: a task goes to its device's queue once each dependency has
// finished or is already queued on the same device (devices run their queue in order); a
// cross-device dependency still waits for completion; a kernel queued behind a failed one runs
// again after the failed kernel's rerun. The devices here are in-order fakes whose kernels
// complete only when the test releases them, and whose outputs the test can check.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "runtime/real_driver.h"

namespace tandem {
namespace {

using namespace std::chrono_literals;

// An in-order device that runs each kernel when it is submitted (as a device runs its queue while
// the host has not yet seen the completions) but reports kernel i complete only when the test
// releases it (or at submit once the gate is open). A kernel writes out[0] = a[0] + 1; one that is
// told to fail writes 1e30 instead (a fault that leaves garbage in the output) and reports an error.
class GatedDevice final : public devices::Device {
 public:
  explicit GatedDevice(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  devices::DeviceCaps caps() const override {
    devices::DeviceCaps c{devices::DeviceKind::kGpu, true, true, true, "gated kernels"};
    return c;
  }
  bool supports(const graph::OpCall&) const override { return true; }
  Result<std::unique_ptr<devices::Completion>> submit(const graph::OpCall& call) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(call);
    const size_t i = calls_.size() - 1;
    if (fail_.count(i)) {
      call.out.data[0] = 1e30f;
      status_.push_back(Internal("gated fault"));
    } else {
      call.out.data[0] = call.a.data[0] + 1.0f;
      status_.push_back(Status::Ok());
    }
    if (open_) complete_up_to(calls_.size());
    submitted_cv_.notify_all();
    return std::unique_ptr<devices::Completion>(new Gated(this, i));
  }

  void fail_submission(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_.insert(i);
  }
  void release(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    complete_up_to(done_ + n);
  }
  void open() {  // completes what is queued, and from now on every kernel at submit
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    complete_up_to(calls_.size());
  }
  size_t submitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.size();
  }
  size_t completed() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  // Waits (up to a second) until n kernels were submitted.
  bool wait_submitted(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return submitted_cv_.wait_for(lock, 1s, [&] { return calls_.size() >= n; });
  }

 private:
  class Gated final : public devices::Completion {
   public:
    Gated(GatedDevice* d, size_t i) : d_(d), i_(i) {}
    Status wait() override {
      std::unique_lock<std::mutex> lock(d_->mu_);
      d_->done_cv_.wait(lock, [&] { return d_->done_ > i_; });
      return d_->status_[i_];
    }
    bool ready() override {
      std::lock_guard<std::mutex> lock(d_->mu_);
      return d_->done_ > i_;
    }
    double device_seconds() const override { return 0; }

   private:
    GatedDevice* d_;
    size_t i_;
  };

  void complete_up_to(size_t n) {  // with mu_ held; in submission order
    done_ = std::max(done_, std::min(n, calls_.size()));
    done_cv_.notify_all();
  }

  std::string name_;
  std::mutex mu_;
  std::condition_variable submitted_cv_, done_cv_;
  std::vector<graph::OpCall> calls_;
  std::vector<Status> status_;
  std::set<size_t> fail_;
  size_t done_ = 0;
  bool open_ = false;
};

// out[0] = in[0] + 1 on `device`.
int add_kernel(TaskGraph& g, const std::string& device, float* in, float* out, std::vector<int> deps,
               std::string fallback = "") {
  Task t;
  t.device = device;
  graph::OpCall c;
  c.kind = graph::OpKind::kAdd;
  c.a = graph::Act{in, 1, 1, 1};
  c.out = graph::Act{out, 1, 1, 1};
  t.call = c;
  t.deps = std::move(deps);
  t.fallback_device = std::move(fallback);
  t.label = "add on " + device;
  return g.add(std::move(t));
}

// Runs the graph on a thread of its own while the test drives the gates; on the way out it opens
// every gate (so nothing hangs when an assertion failed) and joins.
class Running {
 public:
  Running(RealDriver& driver, const TaskGraph& g, std::vector<GatedDevice*> gates)
      : gates_(std::move(gates)), thread_([&driver, &g, this] { status_ = driver.run(g); }) {}
  ~Running() { (void)finish(); }
  Status finish() {
    if (thread_.joinable()) {
      for (GatedDevice* d : gates_) d->open();
      thread_.join();
    }
    return status_;
  }

 private:
  std::vector<GatedDevice*> gates_;
  Status status_ = Status::Ok();
  std::thread thread_;
};

TEST(DriverQueue, ASameDeviceDependentIsSubmittedBeforeItsDependencyCompletes) {
  GatedDevice gpu("gpu");
  RealDriver driver({{"gpu", &gpu}}, SyncMode::kBlocking);
  float x[3] = {1, 0, 0};
  TaskGraph g;
  const int a = add_kernel(g, "gpu", &x[0], &x[1], {});
  add_kernel(g, "gpu", &x[1], &x[2], {a});
  Running run(driver, g, {&gpu});
  EXPECT_TRUE(gpu.wait_submitted(2)) << "the dependent was not queued behind its running dependency";
  EXPECT_EQ(gpu.completed(), 0u);
  gpu.release(2);
  ASSERT_TRUE(run.finish().ok());
  EXPECT_EQ(x[2], 3.0f);
}

TEST(DriverQueue, ACrossDeviceDependentWaitsForItsDependencyToComplete) {
  GatedDevice gpu("gpu"), npu("npu");
  npu.open();
  RealDriver driver({{"gpu", &gpu}, {"npu", &npu}}, SyncMode::kBlocking);
  float x[3] = {1, 0, 0};
  TaskGraph g;
  const int a = add_kernel(g, "gpu", &x[0], &x[1], {});
  add_kernel(g, "npu", &x[1], &x[2], {a});
  Running run(driver, g, {&gpu, &npu});
  ASSERT_TRUE(gpu.wait_submitted(1));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(npu.submitted(), 0u) << "the npu kernel was submitted before the gpu kernel it reads completed";
  gpu.release(1);
  EXPECT_TRUE(npu.wait_submitted(1));
  ASSERT_TRUE(run.finish().ok());
  EXPECT_EQ(x[2], 3.0f);
  EXPECT_EQ(driver.stats().queued_ahead, 0u);
}

// A kernel without a fallback (the partitioner gives one only to kernels safe to run twice) is
// not queued behind one that may fail over: it would run again after the rerun, and an in-place
// kernel run twice applies twice.
TEST(DriverQueue, AKernelUnsafeToRunTwiceWaitsBehindOneThatMayFailOver) {
  GatedDevice npu("npu"), cpu("cpu");
  cpu.open();
  RealDriver driver({{"npu", &npu}, {"cpu", &cpu}}, SyncMode::kBlocking);
  float x[3] = {1, 0, 0};
  TaskGraph g;
  const int a = add_kernel(g, "npu", &x[0], &x[1], {}, "cpu");
  add_kernel(g, "npu", &x[1], &x[2], {a});
  Running run(driver, g, {&npu, &cpu});
  ASSERT_TRUE(npu.wait_submitted(1));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(npu.submitted(), 1u) << "queued behind a kernel that may fail over";
  npu.release(1);
  EXPECT_TRUE(npu.wait_submitted(2));
  npu.open();
  ASSERT_TRUE(run.finish().ok());
  EXPECT_EQ(x[2], 3.0f);
}

// The npu fails its first kernel after it ran (garbage in the output). Two dependents queued
// behind it on the npu read that garbage: their results are discarded and they run again once the
// failed kernel's rerun on the fallback device has finished. A kernel that depends on them and on
// a gpu kernel finishing meanwhile must not be queued behind their bad runs either. An independent
// kernel queued behind the failed one keeps its result; the gpu kernel at the end sees only right
// inputs.
TEST(DriverQueue, KernelsQueuedBehindAFailedKernelRunAgainAfterItsRerun) {
  GatedDevice gpu("gpu"), npu("npu"), cpu("cpu");
  cpu.open();
  npu.fail_submission(0);
  RealDriver driver({{"gpu", &gpu}, {"npu", &npu}, {"cpu", &cpu}}, SyncMode::kBlocking);
  float x[5] = {1, 0, 0, 0, 0};
  float y[2] = {10, 0}, z[2] = {20, 0}, w = 0;
  TaskGraph g;
  const int t0 = add_kernel(g, "npu", &x[0], &x[1], {}, "cpu");
  // t1 and t2 are safe to run twice (their output is not an input): they carry a fallback too.
  const int t1 = add_kernel(g, "npu", &x[1], &x[2], {t0}, "cpu");
  const int t2 = add_kernel(g, "npu", &x[2], &x[3], {t1}, "cpu");
  add_kernel(g, "npu", &y[0], &y[1], {});
  const int gk = add_kernel(g, "gpu", &z[0], &z[1], {});
  add_kernel(g, "gpu", &x[3], &x[4], {t2});
  add_kernel(g, "npu", &x[3], &w, {t2, gk});
  Running run(driver, g, {&gpu, &npu, &cpu});
  ASSERT_TRUE(npu.wait_submitted(4)) << "the npu chain was not queued ahead";
  ASSERT_TRUE(gpu.wait_submitted(1));
  EXPECT_EQ(npu.completed(), 0u);
  ::testing::internal::CaptureStderr();
  npu.release(1);  // t0 fails; t1 and t2 are still in the npu's queue
  EXPECT_TRUE(cpu.wait_submitted(1)) << "t0 did not rerun on its fallback";
  gpu.release(1);  // the gpu kernel finishes while t2's bad run is still queued
  std::this_thread::sleep_for(20ms);
  npu.open();
  const Status status = run.finish();
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_NE(warnings.find("warning: npu failed"), std::string::npos) << warnings;
  EXPECT_EQ(x[1], 2.0f);
  EXPECT_EQ(x[4], 5.0f) << "a dependent of the failed kernel kept a result computed from its garbage";
  EXPECT_EQ(w, 5.0f) << "a kernel was queued behind a discarded run";
  EXPECT_EQ(y[1], 11.0f);
  EXPECT_EQ(z[1], 21.0f);
  EXPECT_EQ(npu.submitted(), 7u) << "t1 and t2 ran twice, the others once on the npu";
  EXPECT_EQ(cpu.submitted(), 1u) << "t0's rerun";
  const DriverStats& s = driver.stats();
  EXPECT_EQ(s.rerun_on_fallback, 1u);
  EXPECT_EQ(s.discarded_behind_failure, 2u);
  std::multiset<int> discarded;
  for (const TaskTiming& t : driver.timings())
    if (t.discarded) discarded.insert(t.task);
  EXPECT_EQ(discarded, (std::multiset<int>{t1, t2}));
}

TEST(DriverQueue, StatsAndTraceCountKernelsQueuedAhead) {
  GatedDevice gpu("gpu"), npu("npu");
  npu.open();
  RealDriver driver({{"gpu", &gpu}, {"npu", &npu}}, SyncMode::kBlocking);
  float x[6] = {0, 0, 0, 0, 0, 0};
  TaskGraph g;
  int prev = add_kernel(g, "gpu", &x[0], &x[1], {});
  for (int i = 1; i < 4; ++i) prev = add_kernel(g, "gpu", &x[i], &x[i + 1], {prev});
  add_kernel(g, "npu", &x[4], &x[5], {prev});
  Running run(driver, g, {&gpu, &npu});
  ASSERT_TRUE(gpu.wait_submitted(4));
  std::this_thread::sleep_for(20ms);  // three kernels wait in the gpu's queue meanwhile
  gpu.release(4);
  ASSERT_TRUE(run.finish().ok());
  EXPECT_EQ(x[5], 5.0f);
  const DriverStats& s = driver.stats();
  EXPECT_EQ(s.queued_ahead, 3u);
  EXPECT_EQ(s.queued_ahead_per_device.at("gpu"), 3u);
  EXPECT_EQ(s.queued_ahead_per_device.count("npu"), 0u);
  int flagged = 0;
  for (const TaskTiming& t : driver.timings()) {
    if (t.task < 0) continue;
    flagged += t.queued_ahead;
    EXPECT_LE(t.queued_s, t.start_s);
    EXPECT_LE(t.start_s, t.end_s);
  }
  EXPECT_EQ(flagged, 3);

  // The trace: each kernel says how long it waited in its queue; the gpu's queue is a counter
  // that reached 3 while the first kernel ran.
  const std::string path = ::testing::TempDir() + "driver-queue-trace.json";
  ASSERT_TRUE(driver.write_trace(path).ok());
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  double max_depth = 0, max_queued_us = 0;
  int last_depth = -1;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "gpu queue") {
      max_depth = std::max(max_depth, e["args"]["kernels"].get<double>());
      last_depth = e["args"]["kernels"].get<int>();
    }
    if (e["ph"] == "X" && e["cat"] == "kernel") max_queued_us = std::max(max_queued_us, e["args"]["queued_us"].get<double>());
  }
  EXPECT_GE(max_depth, 3.0);
  EXPECT_EQ(last_depth, 0) << "the queue drained";
  EXPECT_GE(max_queued_us, 15000.0) << "the last gpu kernel waited through the 20 ms sleep";
}

}  // namespace
}  // namespace tandem
