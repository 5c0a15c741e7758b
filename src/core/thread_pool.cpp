#include "core/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TANDEM_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define TANDEM_PAUSE() __asm__ __volatile__("yield")
#else
#define TANDEM_PAUSE() ((void)0)
#endif

namespace tandem {
namespace {
// Spin this many rounds before sleeping: long enough to bridge the gap between two kernels of
// one token, short enough not to burn a core between tokens.
constexpr int kSpinRounds = 1 << 14;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_impl(Trampoline fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  job_fn_ = fn;
  job_ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(ctx, 0, n_threads_);
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinRounds) {
      TANDEM_PAUSE();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::worker_loop(int ith) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = generation_.load(std::memory_order_acquire);
    for (int spins = 0; gen == seen && spins < kSpinRounds; ++spins) {
      TANDEM_PAUSE();
      gen = generation_.load(std::memory_order_acquire);
    }
    while (gen == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    job_fn_(job_ctx_, ith, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace tandem
