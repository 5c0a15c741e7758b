#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/thread_pool.h"

namespace tandem {
namespace {

TEST(ThreadPool, EveryThreadRunsOncePerCall) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.run([&](int ith, int nth) {
        ASSERT_EQ(nth, n);
        hits[size_t(ith)]++;
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "thread " << i << " rep " << rep;
    }
  }
}

TEST(ThreadPool, ParallelForCoversTheRangeExactlyOnce) {
  ThreadPool pool(3);
  for (size_t n : {0u, 1u, 2u, 3u, 7u, 100u, 1001u}) {
    std::vector<std::atomic<int>> seen(n);
    pool.parallel_for(n, [&](size_t b, size_t e, int) {
      for (size_t i = b; i < e; ++i) seen[i]++;
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << "n " << n << " index " << i;
  }
}

TEST(ThreadPool, ResultsAreVisibleToTheCallerAfterRun) {
  ThreadPool pool(2);
  std::vector<int> out(2, 0);
  for (int rep = 1; rep <= 1000; ++rep) {
    pool.run([&](int ith, int) { out[size_t(ith)] = rep; });
    ASSERT_EQ(out[0], rep);
    ASSERT_EQ(out[1], rep);
  }
}

}  // namespace
}  // namespace tandem
