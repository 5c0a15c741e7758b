// sync_handoff_bench: the cost of handing work from one device to another, blocking vs. fast.
//
// Two threads play two processors. The "producer device" runs a busy kernel of a fixed duration
// (spinning, like a GPU/NPU that is busy) and raises its completion counter when its output is
// ready; the "consumer" (the sync thread that submits the next kernel on the other processor)
// waits for it with one of the two protocols, exactly as the RealDriver waits on a device's
// completion (sync::fast_wait_loop, or a blocking wait in the OS), then runs a short kernel of its
// own and launches the producer's next kernel. Per handoff we measure:
//   handoff latency  producer's signal -> consumer resumes (what the next kernel's start is late by)
//   consumer CPU     thread CPU time the consumer burned while waiting (polling is not free)
// The fast protocol predicts the launch-to-signal time from the previous handoffs
// (LatencyPredictor), exactly as layer N+1 uses layer N's time.
//
// Usage: sync_handoff_bench [--handoffs N] [--durations 50,200,500] [--consumer-work US]
//                           [--json] [--trace FILE]
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <condition_variable>
#include <mutex>

#include "runtime/sync/latency_predictor.h"
#include "runtime/sync/sync_mode.h"
#include "runtime/sync/wait_policy.h"
#include "runtime/trace/chrome_trace.h"

using namespace tandem;
using sync::now_ns;

namespace {

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void busy_for(int64_t ns) {
  const int64_t end = now_ns() + ns;
  while (now_ns() < end) sync::cpu_relax();
}

struct Options {
  int handoffs = 1000;
  int warmup = 20;
  std::vector<int64_t> durations_us = {50, 200, 500};
  int64_t consumer_work_us = 20;
  bool json = false;
  std::string trace_path;
};

struct RunResult {
  std::string policy;
  int64_t kernel_us = 0;
  int handoffs = 0;
  double p50_us = 0, p99_us = 0, max_us = 0, mean_us = 0;
  double wait_cpu_us = 0;   // consumer CPU time while waiting, per handoff
  double wait_wall_us = 0;  // consumer wall time while waiting, per handoff
  double consumer_cpu_ms = 0;  // whole consumer thread, whole run
  int fallbacks = 0;
  int overruns = 0;  // launch -> signal took > 1.5x + 20 us the nominal kernel time (preempted)
  double sleeps_per_handoff = 0;
  double predicted_us = 0;  // last prediction
  int errors = 0;
};

// The producer's completions: a counter it raises after each kernel (the flag in the shared pool
// a device writes), which the fast loop polls, and a condition variable the blocking wait sleeps
// on (the OS wake-up a clFinish pays).
class Completions {
 public:
  uint64_t count() const { return n_.load(std::memory_order_acquire); }
  void raise(uint64_t value) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      n_.store(value, std::memory_order_release);
    }
    cv_.notify_all();
  }
  // Blocks until the count reaches `value` or deadline_ns passes.
  bool block_until(uint64_t value, int64_t deadline_ns) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns)),
                          [&] { return count() >= value; });
  }

 private:
  std::atomic<uint64_t> n_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Kernel `value` of the producer as the fast loop sees it.
class KernelDone final : public sync::Awaitable {
 public:
  KernelDone(Completions& c, uint64_t value) : c_(c), value_(value) {}
  bool ready() const override { return c_.count() >= value_; }
  bool block_until(int64_t deadline_ns) override { return c_.block_until(value_, deadline_ns); }

 private:
  Completions& c_;
  uint64_t value_;
};

double pct(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return double(v[size_t(q * double(v.size() - 1) + 0.5)]) / 1000.0;
}

RunResult run(SyncMode mode, const sync::FastWaitParams& params, int64_t kernel_ns, const Options& opt,
              trace::TraceRecorder* rec, trace::TrackId t_prod, trace::TrackId t_cons, int64_t trace_origin) {
  const int n = opt.handoffs + opt.warmup;
  std::atomic<uint64_t> go{0};
  std::atomic<bool> abort{false};
  Completions done;
  const size_t slots = static_cast<size_t>(n);
  std::vector<int64_t> kernel_start(slots), kernel_dur(slots), signal_ts(slots);
  std::thread producer([&] {
    for (int i = 1; i <= n; ++i) {
      while (go.load(std::memory_order_acquire) < uint64_t(i)) {  // the device is idle-spinning for work
        if (abort.load()) return;
        sync::cpu_relax();
      }
      const int64_t s = now_ns();
      busy_for(kernel_ns);
      const int64_t e = now_ns();
      kernel_start[size_t(i - 1)] = s;
      kernel_dur[size_t(i - 1)] = e - s;
      signal_ts[size_t(i - 1)] = now_ns();
      done.raise(uint64_t(i));
    }
  });

  sync::LatencyPredictor predictor(0.5);
  std::string key = "busy_";
  key += std::to_string(kernel_ns / 1000);
  key += "us";
  RunResult r;
  r.policy = sync_mode_name(mode);
  r.kernel_us = kernel_ns / 1000;
  std::vector<int64_t> lat;
  lat.reserve(size_t(opt.handoffs));
  int64_t wait_cpu = 0, wait_wall = 0, sleeps = 0;
  const int64_t cpu0 = thread_cpu_ns();
  for (int i = 1; i <= n; ++i) {
    const int64_t kernel_start_ns = now_ns();
    const int64_t predicted_ns = predictor.predict(key).value_or(0);
    go.store(uint64_t(i), std::memory_order_release);
    const int64_t c0 = thread_cpu_ns();
    const int64_t w0 = now_ns();
    const int64_t deadline = w0 + 5'000'000'000;
    sync::WaitStats st;
    bool reached;
    if (mode == SyncMode::kFast) {
      KernelDone kernel(done, uint64_t(i));
      reached = sync::fast_wait_loop(params, kernel, kernel_start_ns, predicted_ns, deadline, &st) == sync::LoopEnd::kReady;
    } else {
      reached = done.count() >= uint64_t(i) || done.block_until(uint64_t(i), deadline);
      st.fell_back = true;
    }
    const int64_t resume = now_ns();
    const int64_t c1 = thread_cpu_ns();
    if (!reached) {
      ++r.errors;
      abort.store(true);
      break;
    }
    const size_t k = size_t(i - 1);
    // Launch-to-signal time, stamped by the producer (visible after the acquire): what the next
    // wait must predict. Not the consumer's own resume time, which would feed its lateness back.
    const int64_t launch_to_signal = signal_ts[k] - kernel_start_ns;
    predictor.observe(key, launch_to_signal);
    if (i > opt.warmup) {
      lat.push_back(resume - signal_ts[k]);
      wait_cpu += c1 - c0;
      wait_wall += resume - w0;
      sleeps += st.sleeps;
      r.fallbacks += st.fell_back && mode == SyncMode::kFast ? 1 : 0;
      r.overruns += launch_to_signal > kernel_ns + kernel_ns / 2 + 20'000 ? 1 : 0;
    }
    const int64_t work0 = now_ns();
    busy_for(opt.consumer_work_us * 1000);  // the consumer's next kernel
    if (rec && i > opt.warmup && i <= opt.warmup + 40) {
      std::string tag = r.policy;
      tag += " ";
      tag += key;
      rec->complete(t_prod, "kernel " + key, "kernel", kernel_start[k] - trace_origin, kernel_dur[k],
                    {{"handoff", i}, {"policy", r.policy}});
      rec->complete(t_cons, "wait (" + r.policy + ")", "sync", w0 - trace_origin, resume - w0,
                    {{"predicted_us", double(predicted_ns) / 1000.0},
                     {"sleeps", st.sleeps},
                     {"polls", int64_t(st.polls)},
                     {"fell_back", st.fell_back},
                     {"handoff_latency_us", double(resume - signal_ts[k]) / 1000.0}});
      rec->complete(t_cons, "consumer kernel", "kernel", work0 - trace_origin, now_ns() - work0, {{"tag", tag}});
    }
  }
  r.consumer_cpu_ms = double(thread_cpu_ns() - cpu0) / 1e6;
  producer.join();

  r.handoffs = int(lat.size());
  if (!lat.empty()) {
    r.p50_us = pct(lat, 0.50);
    r.p99_us = pct(lat, 0.99);
    r.max_us = pct(lat, 1.0);
    double sum = 0;
    for (int64_t v : lat) sum += double(v);
    r.mean_us = sum / double(lat.size()) / 1000.0;
    r.wait_cpu_us = double(wait_cpu) / double(lat.size()) / 1000.0;
    r.wait_wall_us = double(wait_wall) / double(lat.size()) / 1000.0;
    r.sleeps_per_handoff = double(sleeps) / double(lat.size());
  }
  r.predicted_us = double(predictor.predict(key).value_or(0)) / 1000.0;
  return r;
}

std::vector<int64_t> parse_list(const char* s) {
  std::vector<int64_t> out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) out.push_back(std::atoll(cur.c_str()));
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: sync_handoff_bench [--handoffs N] [--warmup N] [--durations US,US,...] "
               "[--consumer-work US] [--json] [--trace FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--json") {
      opt.json = true;
    } else if (a == "--handoffs" && (v = next())) {
      opt.handoffs = std::max(1, std::atoi(v));
    } else if (a == "--warmup" && (v = next())) {
      opt.warmup = std::max(0, std::atoi(v));
    } else if (a == "--durations" && (v = next())) {
      opt.durations_us = parse_list(v);
    } else if (a == "--consumer-work" && (v = next())) {
      opt.consumer_work_us = std::max<int64_t>(0, std::atoll(v));
    } else if (a == "--trace" && (v = next())) {
      opt.trace_path = v;
    } else {
      return usage();
    }
  }
  if (opt.durations_us.empty()) return usage();

  const unsigned cores = std::thread::hardware_concurrency();
  const sync::SleepCalibration cal = sync::calibrate_sleep(200, 1'000);
  sync::FastWaitParams params;
  params.sleep_granularity_ns = cal.p50_overshoot_ns;

  trace::WallClock clock;
  const int64_t trace_origin = now_ns();
  trace::TraceRecorder rec(&clock, "sync_handoff_bench");
  const trace::TrackId t_prod = rec.add_track("producer device");
  const trace::TrackId t_cons = rec.add_track("consumer / sync thread");
  trace::TraceRecorder* recp = opt.trace_path.empty() ? nullptr : &rec;

  std::vector<RunResult> results;
  for (int64_t us : opt.durations_us) {
    results.push_back(run(SyncMode::kBlocking, params, us * 1000, opt, recp, t_prod, t_cons, trace_origin));
    results.push_back(run(SyncMode::kFast, params, us * 1000, opt, recp, t_prod, t_cons, trace_origin));
  }

  if (opt.json) {
    nlohmann::json j;
    j["cores"] = cores;
    j["warning"] = cores <= 2 ? "2 or fewer cores shared with other work: numbers are noisy" : "";
    j["sleep_calibration"] = {{"requested_ns", cal.requested_ns},
                              {"min_overshoot_ns", cal.min_overshoot_ns},
                              {"p50_overshoot_ns", cal.p50_overshoot_ns},
                              {"p90_overshoot_ns", cal.p90_overshoot_ns}};
    j["fast_params"] = {{"sleep_granularity_ns", params.sleep_granularity_ns},
                        {"margin_frac", params.margin_frac},
                        {"margin_ns", params.margin_ns},
                        {"poll_cap_ns", params.poll_cap_ns},
                        {"poll_cap_frac", params.poll_cap_frac}};
    j["handoffs"] = opt.handoffs;
    j["consumer_work_us"] = opt.consumer_work_us;
    j["results"] = nlohmann::json::array();
    for (const RunResult& r : results) {
      j["results"].push_back({{"policy", r.policy},
                              {"kernel_us", r.kernel_us},
                              {"handoffs", r.handoffs},
                              {"latency_us", {{"p50", r.p50_us}, {"p99", r.p99_us}, {"max", r.max_us}, {"mean", r.mean_us}}},
                              {"wait_cpu_us_per_handoff", r.wait_cpu_us},
                              {"wait_wall_us_per_handoff", r.wait_wall_us},
                              {"consumer_cpu_ms_total", r.consumer_cpu_ms},
                              {"fallbacks", r.fallbacks},
                              {"producer_overruns", r.overruns},
                              {"sleeps_per_handoff", r.sleeps_per_handoff},
                              {"predicted_us", r.predicted_us},
                              {"errors", r.errors}});
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("sync_handoff_bench: %d handoffs per run (+%d warm-up), consumer kernel %lld us\n", opt.handoffs,
                opt.warmup, (long long)opt.consumer_work_us);
    std::printf("cores: %u%s\n", cores,
                cores <= 2 ? "  WARNING: 2 or fewer cores shared with other work: numbers are noisy" : "");
    std::printf("sleep(1us) overshoot: min %.1f  p50 %.1f  p90 %.1f us -> fast sleep granularity %.1f us\n",
                cal.min_overshoot_ns / 1e3, cal.p50_overshoot_ns / 1e3, cal.p90_overshoot_ns / 1e3,
                params.sleep_granularity_ns / 1e3);
    std::printf("\n%-9s %9s | %9s %9s %9s %9s | %10s %10s | %9s %7s %8s %8s\n", "policy", "kernel_us", "p50_us",
                "p99_us", "max_us", "mean_us", "waitCPU_us", "waitWall_us", "fallbacks", "sleeps", "pred_us", "overruns");
    for (const RunResult& r : results) {
      std::printf("%-9s %9lld | %9.1f %9.1f %9.1f %9.1f | %10.1f %10.1f | %9d %7.2f %8.1f %8d%s\n", r.policy.c_str(),
                  (long long)r.kernel_us, r.p50_us, r.p99_us, r.max_us, r.mean_us, r.wait_cpu_us, r.wait_wall_us,
                  r.fallbacks, r.sleeps_per_handoff, r.predicted_us, r.overruns, r.errors ? "  (ERROR)" : "");
    }
    std::printf("\nlatency = producer signal -> consumer resumes; waitCPU = consumer CPU time while waiting, per handoff;\n"
                "overruns = launch->signal > 1.5x the kernel time (producer preempted: the two 'devices' share CPU cores here)\n");
  }
  if (recp) {
    Status s = rec.write_file(opt.trace_path);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
    if (!opt.json) std::printf("trace: %s (%zu events)\n", opt.trace_path.c_str(), rec.event_count());
  }
  for (const RunResult& r : results)
    if (r.errors) return 1;
  return 0;
}
