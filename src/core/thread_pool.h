// A fixed pool of worker threads for data-parallel kernels.
//
// Decode runs a few hundred small kernels per token, so dispatch latency matters more than
// throughput: workers spin briefly on a generation counter before sleeping on it (futex via
// std::atomic::wait), and the calling thread takes part as thread 0 instead of idling.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace tandem {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // total threads, including the caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(ith, nth) once on each of the nth threads; returns when every call has returned.
  template <class Fn>
  void run(Fn&& fn) {
    auto trampoline = [](void* ctx, int ith, int nth) { (*static_cast<Fn*>(ctx))(ith, nth); };
    run_impl(trampoline, &fn);
  }

  // Splits [0, n) into contiguous chunks, one per thread, and calls fn(begin, end, ith).
  template <class Fn>
  void parallel_for(size_t n, Fn&& fn) {
    run([&](int ith, int nth) {
      const size_t per = (n + size_t(nth) - 1) / size_t(nth);
      const size_t begin = std::min(n, per * size_t(ith));
      const size_t end = std::min(n, begin + per);
      if (begin < end) fn(begin, end, ith);
    });
  }

 private:
  using Trampoline = void (*)(void*, int, int);
  void run_impl(Trampoline fn, void* ctx);
  void worker_loop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  Trampoline job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace tandem
