#include "runtime/real_driver.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <queue>

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

struct RealDriver::InFlight {
  Worker::Queued q;
  double submit_s = 0;
  std::unique_ptr<devices::Completion> completion;  // null for a host step or a failed submit
  Status status = Status::Ok();                     // of the submit when it failed
};

void RealDriver::report(Worker& w, InFlight& f, Status status, double& prev_end) {
  const Task& t = *f.q.task;
  Done d{t.id, std::move(status), TaskTiming{}, f.completion ? f.completion->device_seconds() : 0.0};
  d.timing.task = t.id;
  d.timing.device = w.name;
  d.timing.name = t.label;
  d.timing.queued_s = f.q.queued_s;
  // It could start once submitted and once the device's previous kernel had completed (in-order).
  d.timing.start_s = std::max(f.submit_s, prev_end);
  d.timing.end_s = std::max(d.timing.start_s, now());
  d.timing.queued_ahead = f.q.queued_ahead;
  d.timing.device_s = d.device_seconds;
  prev_end = d.timing.end_s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(d));
  }
  done_cv_.notify_one();
}

void RealDriver::worker_loop(Worker& w) {
  std::deque<InFlight> in_flight;  // submitted, oldest first: the device completes them in order
  double prev_end = 0;             // when the device's previous kernel completed
  auto report_completed = [&] {   // the completed prefix, in order
    while (!in_flight.empty() && (!in_flight.front().completion || in_flight.front().completion->ready())) {
      InFlight& f = in_flight.front();
      if (f.completion) ++found_complete_;
      report(w, f, f.completion ? f.completion->wait() : f.status, prev_end);
      in_flight.pop_front();
    }
  };
  for (;;) {
    std::deque<Worker::Queued> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (in_flight.empty()) work_cv_.wait(lock, [&] { return stop_ || !w.queue.empty(); });
      if (stop_ && w.queue.empty() && in_flight.empty()) return;
      batch.swap(w.queue);
    }
    // Submit everything queued without waiting for each. An inline device (cpu, npu) runs the
    // kernel inside submit(): each is reported as soon as it returns, so a dependent on another
    // device does not wait for the kernels queued behind it.
    for (Worker::Queued& q : batch) {
      InFlight f{q, now(), nullptr, Status::Ok()};
      if (q.task->host_step) {
        q.task->host_step();
      } else {
        auto c = w.device->submit(*q.task->call);
        if (c.ok()) {
          f.completion = std::move(*c);
        } else {
          f.status = c.status();
        }
      }
      in_flight.push_back(std::move(f));
      report_completed();
    }
    if (in_flight.empty()) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!w.queue.empty()) continue;  // more arrived meanwhile: submit it before waiting
    }
    // Wait for the oldest by the sync policy (a kernel that completed while others were being
    // submitted is taken without a wait, and teaches the predictor nothing).
    InFlight& f = in_flight.front();
    if (f.completion->ready()) {
      report_completed();
      continue;
    }
    Status status = wait_for(*f.completion, *f.q.task, w);
    report(w, f, std::move(status), prev_end);
    in_flight.pop_front();
    report_completed();
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
  std::vector<std::vector<int>> dependents(tasks.size());
  for (const Task& t : tasks) {
    if (!workers_.count(t.device)) {
      return InvalidArgument("driver: task " + std::to_string(t.id) + " (" + t.label + ") needs device '" + t.device +
                             "', which this run has not opened");
    }
    for (int d : t.deps) dependents[size_t(d)].push_back(t.id);
  }
  enum class State : uint8_t { kPending, kQueued, kFinished };
  std::vector<State> state(tasks.size(), State::kPending);
  // tainted: queued behind a kernel its device failed, depending on it; its result is discarded.
  // strict: a rerun (of a failed kernel or a tainted one): it is queued only once every dependency
  // has finished, and its dependents wait for it to finish, whatever the devices.
  std::vector<char> tainted(tasks.size(), 0), strict(tasks.size(), 0);
  // A dependency lets its dependent be queued once it is queued on the dependent's own device (the
  // device runs its queue in order); host steps and reruns only once they have finished.
  // Queued behind a kernel that may fail over to its fallback, a dependent runs again after the
  // rerun, so only one that is itself safe to run twice (the partitioner gives those, and only
  // those, a fallback: their output is not also an input) may be queued ahead of it.
  auto same_queue = [&](const Task& dep, const Task& t) {
    return state[size_t(dep.id)] == State::kQueued && !tainted[size_t(dep.id)] && !strict[size_t(dep.id)] &&
           !strict[size_t(t.id)] && dep.device == t.device && !dep.host_step && !t.host_step &&
           (dep.fallback_device.empty() || !t.fallback_device.empty());
  };
  auto ready = [&](const Task& t) {
    if (state[size_t(t.id)] != State::kPending) return false;
    for (int d : t.deps)
      if (state[size_t(d)] != State::kFinished && !same_queue(tasks[size_t(d)], t)) return false;
    return true;
  };
  Status first_error = Status::Ok();
  size_t finished = 0, in_flight = 0;
  std::priority_queue<int, std::vector<int>, std::greater<int>> candidates;  // in graph order
  auto dispatch = [&](int id, const std::string& device) {  // called with mu_ held
    const Task& t = tasks[size_t(id)];
    bool ahead = false;
    for (int d : t.deps) ahead = ahead || state[size_t(d)] != State::kFinished;
    if (ahead) {
      ++stats_.queued_ahead;
      ++stats_.queued_ahead_per_device[device];
    }
    state[size_t(id)] = State::kQueued;
    workers_.at(device)->queue.push_back(Worker::Queued{&t, now(), ahead});
    ++in_flight;
    for (int next : dependents[size_t(id)])
      if (tasks[size_t(next)].device == device) candidates.push(next);
  };
  auto dispatch_ready = [&] {
    while (!candidates.empty()) {
      const int id = candidates.top();
      candidates.pop();
      if (first_error.ok() && ready(tasks[size_t(id)])) dispatch(id, tasks[size_t(id)].device);
    }
  };
  std::unique_lock<std::mutex> lock(mu_);
  for (const Task& t : tasks)
    if (ready(t)) dispatch(t.id, t.device);
  while (!candidates.empty()) candidates.pop();  // the pass above saw them all
  work_cv_.notify_all();
  while (in_flight > 0) {
    const double wait_start = now();
    done_cv_.wait(lock, [&] { return !done_.empty(); });
    record(TaskTiming{-1, "sync", "wait for completion", wait_start, wait_start, now()});
    while (!done_.empty()) {
      Done d = std::move(done_.front());
      done_.pop_front();
      --in_flight;
      const Task& t = tasks[size_t(d.task)];
      stats_.tasks++;
      stats_.host_bytes_copied += t.host_bytes;
      stats_.tasks_per_device[d.timing.device]++;
      stats_.busy_seconds[d.timing.device] += d.timing.end_s - d.timing.start_s;
      stats_.device_seconds[d.timing.device] += d.device_seconds;
      if (tainted[size_t(t.id)]) {
        // It ran behind a kernel that failed, on what that kernel left in its output: throw the
        // result away (whatever the status) and run it again once its dependencies have finished.
        d.timing.discarded = true;
        record(d.timing);
        ++stats_.discarded_behind_failure;
        tainted[size_t(t.id)] = 0;
        strict[size_t(t.id)] = 1;
        state[size_t(t.id)] = State::kPending;
        candidates.push(t.id);
        continue;
      }
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
        // Its dependents already queued behind it on this device (and theirs, transitively) read
        // its bad output: they are tainted. None can have finished (the device completes in order
        // and reports in order), and none on another device was queued (cross-device edges wait for
        // completion), so this finds them all. Simple and correct beats clever here: a fault is rare.
        std::vector<int> stack{t.id};
        while (!stack.empty()) {
          const int x = stack.back();
          stack.pop_back();
          for (int n : dependents[size_t(x)]) {
            if (state[size_t(n)] != State::kQueued || tainted[size_t(n)] || tasks[size_t(n)].device != t.device) continue;
            tainted[size_t(n)] = 1;
            stack.push_back(n);
          }
        }
        strict[size_t(t.id)] = 1;
        dispatch(t.id, t.fallback_device);
        continue;
      }
      if (!d.status.ok()) {
        if (first_error.ok()) first_error = Status(d.status.code(), t.label + ": " + d.status.message());
        continue;
      }
      state[size_t(t.id)] = State::kFinished;
      ++finished;
      if (!first_error.ok()) continue;  // stop dispatching after a failure
      for (int next : dependents[size_t(t.id)]) candidates.push(next);
    }
    dispatch_ready();
    work_cv_.notify_all();
  }
  stats_.fast_waits = fast_waits_.load();
  stats_.fast_fallbacks = fast_fallbacks_.load();
  stats_.blocking_by_choice = blocking_by_choice_.load();
  stats_.blocking_no_free_core = blocking_no_free_core_.load();
  stats_.found_complete = found_complete_.load();
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
  auto ns = [](double s) { return int64_t(s * 1e9); };
  // Per device, +1 when a kernel was queued and -1 when it could start: the queue's depth.
  std::map<std::string, std::vector<std::pair<int64_t, int>>> queue_steps;
  for (const TaskTiming& t : timings_) {
    const int64_t start = ns(t.start_s), dur = std::max<int64_t>(0, ns(t.end_s) - start);
    std::vector<trace::TraceArg> args;
    if (t.task >= 0) {
      args.emplace_back("task", t.task);
      args.emplace_back("queued_us", std::max(0.0, (t.start_s - t.queued_s) * 1e6));
      if (t.queued_ahead) args.emplace_back("queued_ahead", true);
      if (t.device_s > 0) args.emplace_back("device_us", t.device_s * 1e6);
      if (t.discarded) args.emplace_back("discarded", true);
      if (ns(t.queued_s) < start) {
        queue_steps[t.device].emplace_back(ns(t.queued_s), +1);
        queue_steps[t.device].emplace_back(start, -1);
      }
    }
    rec.complete(tracks.at(t.device), t.discarded ? t.name + " (discarded)" : t.name,
                 t.device == "sync" ? "sync" : "kernel", start, dur, std::move(args));
  }
  for (auto& [device, steps] : queue_steps) {
    std::sort(steps.begin(), steps.end());
    int depth = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      depth += steps[i].second;
      if (i + 1 < steps.size() && steps[i + 1].first == steps[i].first) continue;  // one value per moment
      rec.counter(device + " queue", steps[i].first, {{"kernels", depth}});
    }
  }
  return rec.write_file(path);
}

}  // namespace tandem
