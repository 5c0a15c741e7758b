// A few worker threads that run submitted jobs in submission order, each result through a
// shared future. tandem compile checks and times each distinct program here while the main
// thread goes on compiling the next variant (MLIR stays on one thread: one context per compile).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem::compiler {

template <class R>
class JobQueue {
 public:
  explicit JobQueue(unsigned workers) {
    for (unsigned i = 0; i < std::max(1u, workers); ++i) threads_.emplace_back([this] { work(); });
  }
  // Lets the running jobs finish and drops the ones not started (their futures then hold a
  // broken promise; the caller stops waiting on them when it leaves early on an error).
  ~JobQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      queue_.clear();
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  std::shared_future<R> submit(std::function<R()> job) {
    std::packaged_task<R()> task(std::move(job));
    std::shared_future<R> result = task.get_future().share();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
    return result;
  }

 private:
  void work() {
    for (;;) {
      std::packaged_task<R()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<R()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tandem::compiler
