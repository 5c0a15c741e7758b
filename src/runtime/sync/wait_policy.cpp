#include "runtime/sync/wait_policy.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace tandem::sync {

const char* to_string(FastAction a) {
  switch (a) {
    case FastAction::kSleep: return "sleep";
    case FastAction::kPoll: return "poll";
    case FastAction::kBlock: return "block";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Pure protocol.

int64_t fast_wake_target_ns(const FastWaitParams& p, int64_t predicted_ns) {
  if (predicted_ns <= 0) return 0;
  const double margin = p.margin_frac * double(predicted_ns) + double(p.margin_ns);
  return std::max<int64_t>(0, predicted_ns - int64_t(std::llround(margin)));
}

int64_t fast_poll_cap_ns(const FastWaitParams& p, int64_t predicted_ns) {
  const int64_t rel = predicted_ns > 0 ? int64_t(std::llround(p.poll_cap_frac * double(predicted_ns))) : 0;
  return std::max<int64_t>(p.poll_cap_ns, rel);
}

FastDecision decide_fast_wait(const FastWaitParams& p, int64_t predicted_ns, int64_t elapsed_ns,
                              int64_t polled_ns) {
  // Sleep only if the time to the wake target exceeds what one sleep overshoots by; request the
  // remainder so the sleep (request + overshoot) ends at the target.
  const int64_t to_target = fast_wake_target_ns(p, predicted_ns) - elapsed_ns;
  const int64_t granularity = std::max<int64_t>(0, p.sleep_granularity_ns);
  if (polled_ns == 0 && to_target > granularity) return {FastAction::kSleep, to_target - granularity};
  // Polling began at elapsed - polled (no sleep follows a poll). It may run to the predicted
  // completion and then for the overrun cap beyond it; past that the prediction was wrong.
  const int64_t poll_start = elapsed_ns - polled_ns;
  const int64_t to_completion = predicted_ns > 0 ? std::max<int64_t>(0, predicted_ns - poll_start) : 0;
  const int64_t budget = to_completion + fast_poll_cap_ns(p, predicted_ns);
  if (polled_ns < budget) return {FastAction::kPoll, budget - polled_ns};
  return {FastAction::kBlock, 0};
}

ReplayResult replay_fast_wait(const FastWaitParams& p, int64_t predicted_ns, int64_t actual_ns,
                              const ReplayCosts& c) {
  ReplayResult r;
  const int64_t interval = std::max<int64_t>(1, c.poll_interval_ns);
  int64_t t = 0;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    if (t >= actual_ns) {  // the check at the top of every step sees the flag
      r.resume_ns = t;
      return r;
    }
    const FastDecision d = decide_fast_wait(p, predicted_ns, t, r.polled_ns);
    switch (d.action) {
      case FastAction::kSleep: {
        const int64_t slept = d.duration_ns + c.sleep_overshoot_ns;
        t += slept;
        r.slept_ns += slept;
        ++r.sleeps;
        break;
      }
      case FastAction::kPoll: {
        if (actual_ns <= t + d.duration_ns) {  // seen at the first poll at or after completion
          const int64_t polls = (actual_ns - t + interval - 1) / interval;
          r.polled_ns += polls * interval;
          r.resume_ns = t + polls * interval;
          return r;
        }
        t += d.duration_ns;
        r.polled_ns += d.duration_ns;
        break;
      }
      case FastAction::kBlock: {
        r.fell_back = true;
        r.resume_ns = std::max(t, actual_ns) + c.block_wake_ns;
        r.blocked_ns = r.resume_ns - t;
        return r;
      }
    }
  }
  r.fell_back = true;  // unreachable with sane parameters: decide() always makes progress
  r.resume_ns = std::max(t, actual_ns) + c.block_wake_ns;
  return r;
}

ReplayResult replay_blocking_wait(int64_t actual_ns, const ReplayCosts& c) {
  ReplayResult r;
  if (actual_ns <= 0) return r;  // already signaled: no sleep
  r.fell_back = true;
  r.resume_ns = actual_ns + c.block_wake_ns;
  r.blocked_ns = r.resume_ns;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Real waiters.

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

LoopEnd fast_wait_loop(const FastWaitParams& params, Awaitable& what, int64_t kernel_start_ns, int64_t predicted_ns,
                       int64_t deadline_ns, WaitStats* st) {
  for (;;) {
    if (what.ready()) return LoopEnd::kReady;
    const int64_t t = now_ns();
    if (t >= deadline_ns) return LoopEnd::kTimedOut;
    const FastDecision d = decide_fast_wait(params, predicted_ns, t - kernel_start_ns, st->polled_ns);
    switch (d.action) {
      case FastAction::kSleep: {
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(d.duration_ns, deadline_ns - t)));
        st->slept_ns += now_ns() - t;
        ++st->sleeps;
        break;
      }
      case FastAction::kPoll: {
        const int64_t end = std::min(t + d.duration_ns, deadline_ns);
        int64_t now = t;
        while (!what.ready()) {
          cpu_relax();
          ++st->polls;
          now = now_ns();
          if (now >= end) break;
        }
        st->polled_ns += std::max<int64_t>(1, now - t);  // > 0 so the next decision sees progress
        break;
      }
      case FastAction::kBlock: {
        st->fell_back = true;
        const bool reached = what.block_until(deadline_ns);
        st->blocked_ns += now_ns() - t;
        return reached ? LoopEnd::kReady : LoopEnd::kTimedOut;
      }
    }
  }
}

SleepCalibration calibrate_sleep(int samples, int64_t requested_ns) {
  SleepCalibration c;
  c.requested_ns = requested_ns;
  if (samples <= 0) return c;
  std::vector<int64_t> over;
  over.reserve(size_t(samples));
  for (int i = 0; i < samples; ++i) {
    const int64_t t0 = now_ns();
    std::this_thread::sleep_for(std::chrono::nanoseconds(requested_ns));
    over.push_back(std::max<int64_t>(0, now_ns() - t0 - requested_ns));
  }
  std::sort(over.begin(), over.end());
  c.samples = samples;
  c.min_overshoot_ns = over.front();
  c.p50_overshoot_ns = over[over.size() / 2];
  c.p90_overshoot_ns = over[std::min(over.size() - 1, over.size() * 9 / 10)];
  return c;
}

}  // namespace tandem::sync
