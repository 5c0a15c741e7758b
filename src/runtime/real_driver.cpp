#include "runtime/real_driver.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "runtime/trace/chrome_trace.h"

namespace tandem {

RealDriver::RealDriver(std::map<std::string, devices::Device*> devices, SyncMode sync, bool poll_host_devices)
    : sync_(sync) {
  devices.emplace("host", nullptr);
  for (auto& [name, device] : devices) {
    auto w = std::make_unique<Worker>();
    w->name = name;
    w->device = device;
    // Polling needs a core the awaited work does not use; a device computing on every host core
    // (the cpu, PoCL's OpenCL, the emulated NPU) would lose the core the poll takes.
    w->polling_pays = device && (poll_host_devices || !device->caps().computes_on_host_cores);
    workers_.emplace(name, std::move(w));
  }
  for (auto& [name, w] : workers_) {
    Worker* raw = w.get();
    raw->thread = std::thread([this, raw] { worker_loop(*raw); });
  }
}

RealDriver::~RealDriver() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& [name, w] : workers_) w->thread.join();
}

double RealDriver::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void RealDriver::worker_loop(Worker& w) {
  for (;;) {
    const Task* t = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !w.queue.empty(); });
      if (stop_ && w.queue.empty()) return;
      t = w.queue.front();
      w.queue.pop_front();
    }
    Done d{t->id, Status::Ok(), TaskTiming{t->id, w.name, t->label, now(), 0}, 0.0};
    if (t->host_step) {
      t->host_step();
    } else {
      auto c = w.device->submit(*t->call);
      if (!c.ok()) {
        d.status = c.status();
      } else {
        d.status = wait_for(**c, *t, w);
        d.device_seconds = (*c)->device_seconds();
      }
    }
    d.timing.end_s = now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(d));
    }
    done_cv_.notify_one();
  }
}


namespace {

// A device's completion as the fast loop sees it: ready() reads the device's flag (or asks the
// driver); blocking is the completion's own wait, which returns once the kernel has finished.
class CompletionDone final : public sync::Awaitable {
 public:
  explicit CompletionDone(devices::Completion& c) : c_(c) {}
  bool ready() const override { return c_.ready(); }
  bool block_until(int64_t) override {
    (void)c_.wait();  // the status is read again by the caller
    return true;
  }

 private:
  devices::Completion& c_;
};

}  // namespace

Status RealDriver::wait_for(devices::Completion& c, const Task& t, const Worker& w) {
  if (sync_ == SyncMode::kBlocking) return c.wait();
  if (!w.polling_pays) {
    ++blocking_no_free_core_;
    return c.wait();
  }
  const std::string key = task_shape_key(t, w.name);
  const int64_t start = sync::now_ns();
  if (chooser_.choose(key) == SyncMode::kBlocking) {
    ++blocking_by_choice_;
    Status status = c.wait();
    chooser_.record(key, SyncMode::kBlocking, sync::now_ns() - start);
    return status;
  }
  // Fast sync: sleep through most of the predicted time, then poll the completion flag. The sleep
  // never reaches past the shortest completion seen for this shape.
  const std::optional<sync::LatencyPredictor::Entry> seen = predictor_.entry(key);
  const int64_t predicted = seen ? std::min<int64_t>(int64_t(seen->mean_ns), seen->min_ns) : 0;
  sync::WaitStats st;
  CompletionDone done(c);
  ++fast_waits_;
  sync::fast_wait_loop(fast_params_, done, start, predicted, std::numeric_limits<int64_t>::max(), &st);
  if (st.fell_back) ++fast_fallbacks_;
  Status status = c.wait();  // returns at once when ready; carries a failure either way
  const int64_t elapsed = sync::now_ns() - start;
  // Ready at the first look after a sleep: the kernel finished some time during it, so the sleep
  // was too long by an unknown amount; half the elapsed time unlearns it within a few waits. Seen
  // while polling, the elapsed time is the completion to within a poll.
  const bool overslept = st.sleeps > 0 && st.polls == 0 && !st.fell_back;
  predictor_.observe(key, overslept ? elapsed / 2 : elapsed);
  chooser_.record(key, SyncMode::kFast, elapsed);
  return status;
}

Status RealDriver::run(const TaskGraph& g) {
  TANDEM_RETURN_IF_ERROR(g.verify());
  const std::vector<Task>& tasks = g.tasks();
  std::vector<int> waiting(tasks.size());
  std::vector<std::vector<int>> dependents(tasks.size());
  for (const Task& t : tasks) {
    if (!workers_.count(t.device)) {
      return InvalidArgument("driver: task " + std::to_string(t.id) + " (" + t.label + ") needs device '" + t.device +
                             "', which this run has not opened");
    }
    waiting[size_t(t.id)] = int(t.deps.size());
    for (int d : t.deps) dependents[size_t(d)].push_back(t.id);
  }
  Status first_error = Status::Ok();
  size_t finished = 0, in_flight = 0;
  auto dispatch = [&](int id) {  // called with mu_ held
    const Task& t = tasks[size_t(id)];
    workers_.at(t.device)->queue.push_back(&t);
    ++in_flight;
  };
  std::unique_lock<std::mutex> lock(mu_);
  for (const Task& t : tasks)
    if (waiting[size_t(t.id)] == 0) dispatch(t.id);
  work_cv_.notify_all();
  while (in_flight > 0) {
    const double wait_start = now();
    done_cv_.wait(lock, [&] { return !done_.empty(); });
    record(TaskTiming{-1, "sync", "wait for completion", wait_start, now()});
    while (!done_.empty()) {
      Done d = std::move(done_.front());
      done_.pop_front();
      --in_flight;
      ++finished;
      const Task& t = tasks[size_t(d.task)];
      stats_.tasks++;
      stats_.host_bytes_copied += t.host_bytes;
      stats_.tasks_per_device[d.timing.device]++;
      stats_.busy_seconds[d.timing.device] += d.timing.end_s - d.timing.start_s;
      stats_.device_seconds[d.timing.device] += d.device_seconds;
      record(d.timing);
      if (!d.status.ok() && d.timing.device == t.device && !t.fallback_device.empty() && workers_.count(t.fallback_device) &&
          first_error.ok()) {
        // The device failed this kernel: run it again where the task says, once.
        if (!warned_fallback_) {
          std::fprintf(stderr, "tandem: warning: %s failed %s (%s); it and any later failures run on %s\n",
                       t.device.c_str(), t.label.c_str(), d.status.message().c_str(), t.fallback_device.c_str());
          warned_fallback_ = true;
        }
        ++stats_.rerun_on_fallback;
        workers_.at(t.fallback_device)->queue.push_back(&t);
        ++in_flight;
        --finished;
        continue;
      }
      if (!d.status.ok()) {
        if (first_error.ok()) first_error = Status(d.status.code(), t.label + ": " + d.status.message());
        continue;
      }
      if (!first_error.ok()) continue;  // stop dispatching after a failure
      for (int next : dependents[size_t(d.task)])
        if (--waiting[size_t(next)] == 0) dispatch(next);
    }
    work_cv_.notify_all();
  }
  stats_.fast_waits = fast_waits_.load();
  stats_.fast_fallbacks = fast_fallbacks_.load();
  stats_.blocking_by_choice = blocking_by_choice_.load();
  stats_.blocking_no_free_core = blocking_no_free_core_.load();
  if (first_error.ok() && finished != tasks.size()) return Internal("driver: not every task ran (a dependency cycle?)");
  return first_error;
}

void RealDriver::record(TaskTiming t) {
  if (timings_.size() >= kMaxTimings) timings_.erase(timings_.begin(), timings_.begin() + kMaxTimings / 2);
  timings_.push_back(std::move(t));
}

Status RealDriver::write_trace(const std::string& path) const {
  trace::WallClock clock;
  trace::TraceRecorder rec(&clock, "tandem RealDriver");
  std::map<std::string, trace::TrackId> tracks;
  for (const auto& [name, w] : workers_) tracks[name] = rec.add_track(name);
  tracks["sync"] = rec.add_track("sync");
  for (const TaskTiming& t : timings_) {
    const int64_t start = int64_t(t.start_s * 1e9), dur = std::max<int64_t>(0, int64_t((t.end_s - t.start_s) * 1e9));
    std::vector<trace::TraceArg> args;
    if (t.task >= 0) args.emplace_back("task", t.task);
    rec.complete(tracks.at(t.device), t.name, t.device == "sync" ? "sync" : "kernel", start, dur, std::move(args));
  }
  return rec.write_file(path);
}

}  // namespace tandem
