// The worker queue tandem compile checks programs on: every job runs once and its result reaches
// its own future; jobs start in submission order; leaving early drops the jobs not started.
#include "compiler/driver/job_queue.h"

#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <mutex>
#include <vector>

namespace tandem::compiler {
namespace {

TEST(JobQueue, EveryJobRunsOnceAndReturnsItsOwnResult) {
  std::atomic<int> runs{0};
  std::vector<std::shared_future<int>> results;
  {
    JobQueue<int> q(3);
    for (int i = 0; i < 200; ++i)
      results.push_back(q.submit([i, &runs] {
        runs.fetch_add(1);
        return i * i;
      }));
    for (int i = 0; i < 200; ++i) EXPECT_EQ(results[size_t(i)].get(), i * i);
  }
  EXPECT_EQ(runs.load(), 200);
}

TEST(JobQueue, OneWorkerStartsJobsInSubmissionOrder) {
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::shared_future<int>> results;
  JobQueue<int> q(1);
  for (int i = 0; i < 50; ++i)
    results.push_back(q.submit([i, &mu, &order] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
      return i;
    }));
  for (auto& r : results) r.get();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[size_t(i)], i);
}

TEST(JobQueue, LeavingEarlyFinishesTheRunningJobAndDropsTheRest) {
  std::atomic<bool> started{false}, release{false};
  std::atomic<int> runs{0};
  std::shared_future<int> first, later;
  {
    JobQueue<int> q(1);
    first = q.submit([&] {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      runs.fetch_add(1);
      return 1;
    });
    for (int i = 0; i < 10; ++i) later = q.submit([&] { return runs.fetch_add(1) + 100; });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    release = true;  // the destructor waits for this job, not for the ten queued behind it
  }
  EXPECT_EQ(first.get(), 1);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_THROW(later.get(), std::future_error);  // dropped: a broken promise, never run
}

}  // namespace
}  // namespace tandem::compiler
