#include "hexagon/host/doorbell.h"

#include <atomic>
#include <climits>

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace tandem::hexagon {

namespace {

using Clock = std::chrono::steady_clock;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Shared futexes (no FUTEX_PRIVATE_FLAG): the other side is another process on the same file.
void futex_wake(uint32_t* word) { syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

void futex_wait(uint32_t* word, uint32_t unless, long ns) {
  timespec t{0, ns};
  syscall(SYS_futex, word, FUTEX_WAIT, unless, &t, nullptr, 0);
}

}  // namespace

void ring_doorbell(uint32_t* doorbell, uint32_t seq) {
  std::atomic_ref<uint32_t>(*doorbell).store(seq, std::memory_order_release);
  futex_wake(doorbell);
}

WaitOutcome wait_for_flag(uint32_t* flag, uint32_t seq, Clock::time_point deadline,
                          const std::function<bool()>& alive) {
  std::atomic_ref<uint32_t> word(*flag);
  auto done = [&] { return word.load(std::memory_order_acquire) == seq; };
  const Clock::time_point start = Clock::now();
  while (Clock::now() - start < std::chrono::microseconds(20)) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return WaitOutcome::kDone;
      cpu_relax();
    }
  }
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (done()) return WaitOutcome::kDone;
    if (!alive()) return done() ? WaitOutcome::kDone : WaitOutcome::kDead;
    if (now >= deadline) return WaitOutcome::kTimedOut;
    if (now - start < std::chrono::milliseconds(1)) {
      const Clock::time_point until = now + std::chrono::microseconds(100);
      while (Clock::now() < until) {
        if (done()) return WaitOutcome::kDone;
        sched_yield();
      }
    } else {
      const uint32_t seen = word.load(std::memory_order_acquire);
      if (seen == seq) return WaitOutcome::kDone;
      futex_wait(flag, seen, 1000000);
    }
  }
}

}  // namespace tandem::hexagon
