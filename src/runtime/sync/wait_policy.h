// How a thread waits for a device's kernel: the two protocols compared by HeteroInfer.
//
//   blocking  the baseline (like clFinish): the waiter sleeps in the OS until the device says
//             the kernel is done, and pays the wake-up latency after it.
//   fast      HeteroInfer's: the waiter sleeps for the *predicted* remaining time of the awaited
//             kernel (minus a safety margin, and minus the sleep's own overshoot), then polls the
//             flag with a pause loop. If the flag is still unset a capped time past the
//             predicted completion (the prediction was badly wrong) it falls back to blocking,
//             so a bad prediction costs a bounded amount of CPU, never a hang.
//
// One scheduler, two clocks: every decision of the fast protocol is a pure function of
// (prediction, elapsed time, time already polled, parameters) — decide_fast_wait() — so the
// simulator replays the protocol in virtual time (replay_fast_wait()) with exactly the logic the
// real waiter (fast_wait_loop(), run by the RealDriver) runs on the wall clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/status.h"

namespace tandem::sync {

// ---------------------------------------------------------------------------------------------
// Protocol decisions (pure; no clocks, no threads).

struct FastWaitParams {
  // What one OS sleep adds beyond the requested time: usleep() granularity, timer slack and the
  // wake-up. SEEDS SYNC: 80-100 us on a Snapdragon 8 Gen 3; measure the host with calibrate_sleep().
  // A sleep shorter than this is not worth taking; a longer one is shortened by it.
  int64_t sleep_granularity_ns = 60'000;
  // Wake this much before the predicted completion: margin_frac * predicted + margin_ns.
  double margin_frac = 0.05;
  int64_t margin_ns = 10'000;
  // Poll until the predicted completion, then at most max(poll_cap_ns, poll_cap_frac * predicted)
  // longer (the overrun cap); then fall back to blocking.
  int64_t poll_cap_ns = 50'000;
  double poll_cap_frac = 0.25;
};

enum class FastAction { kSleep, kPoll, kBlock };
const char* to_string(FastAction a);

struct FastDecision {
  FastAction action;
  int64_t duration_ns;  // kSleep: the sleep to request; kPoll: the poll budget left; kBlock: 0
};

// Elapsed time (since the awaited kernel started) at which polling should begin.
int64_t fast_wake_target_ns(const FastWaitParams& p, int64_t predicted_ns);
// How far past the predicted completion the waiter keeps polling before it falls back to blocking.
int64_t fast_poll_cap_ns(const FastWaitParams& p, int64_t predicted_ns);

// What to do next, given the predicted kernel duration (<= 0: unknown), the time elapsed since the
// kernel started and the time already spent polling. Called again after every sleep or poll
// period that ended without seeing the flag.
FastDecision decide_fast_wait(const FastWaitParams& p, int64_t predicted_ns, int64_t elapsed_ns,
                              int64_t polled_ns);

// Costs of the primitives, for replaying a wait in virtual time.
struct ReplayCosts {
  int64_t sleep_overshoot_ns = 60'000;  // a requested sleep of d lasts d + this
  int64_t poll_interval_ns = 100;       // one poll of the flag (a load + pause)
  int64_t block_wake_ns = 50'000;       // signal -> a blocked waiter runs (futex/condvar wake-up)
};

struct ReplayResult {
  int64_t resume_ns = 0;   // when the waiter resumes, since the kernel started
  int64_t slept_ns = 0;
  int64_t polled_ns = 0;   // CPU-busy time
  int64_t blocked_ns = 0;
  int sleeps = 0;
  bool fell_back = false;  // ended in a blocking wait
};

// The fast protocol against a kernel that started at t=0 and completes at actual_ns.
ReplayResult replay_fast_wait(const FastWaitParams& p, int64_t predicted_ns, int64_t actual_ns,
                              const ReplayCosts& c);
// The blocking baseline against the same kernel.
ReplayResult replay_blocking_wait(int64_t actual_ns, const ReplayCosts& c);

// ---------------------------------------------------------------------------------------------
// Real waiters (wall clock).

// Monotonic wall clock in ns (std::chrono::steady_clock), the time base of fast_wait_loop().
int64_t now_ns();
// One iteration of a spin-wait loop (x86 pause / arm yield).
void cpu_relax();

struct WaitStats {
  int64_t slept_ns = 0;
  int64_t polled_ns = 0;
  int64_t blocked_ns = 0;
  int sleeps = 0;
  uint64_t polls = 0;
  bool fell_back = false;
};

// What the fast protocol waits on: a producer's progress that can be checked without blocking
// (polled) and waited for by blocking (the fallback): a device's completion (its flag in the
// shared pool, or its driver's event).
class Awaitable {
 public:
  virtual ~Awaitable() = default;
  virtual bool ready() const = 0;
  // Blocks until ready or until deadline_ns (now_ns() time base); false when the deadline passed.
  virtual bool block_until(int64_t deadline_ns) = 0;
};

enum class LoopEnd { kReady, kTimedOut };

// The fast protocol's wait loop, the one every fast waiter runs: asks decide_fast_wait() what to
// do at each step (sleep through the predicted time, poll, or fall back to blocking) and does it
// on the wall clock until `what` is ready or deadline_ns passes. kernel_start_ns is when the
// awaited kernel started; predicted_ns its predicted duration (<= 0: unknown). Adds what it did
// to *stats.
LoopEnd fast_wait_loop(const FastWaitParams& params, Awaitable& what, int64_t kernel_start_ns, int64_t predicted_ns,
                       int64_t deadline_ns, WaitStats* stats);

// Measures what a short sleep really costs on this host: sleeps `samples` times for requested_ns
// and reports the overshoot beyond the request (use p50 as FastWaitParams::sleep_granularity_ns).
struct SleepCalibration {
  int64_t requested_ns = 0;
  int64_t min_overshoot_ns = 0;
  int64_t p50_overshoot_ns = 0;
  int64_t p90_overshoot_ns = 0;
  int samples = 0;
};
SleepCalibration calibrate_sleep(int samples = 50, int64_t requested_ns = 1'000);

}  // namespace tandem::sync
