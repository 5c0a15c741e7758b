#include "runtime/real_driver.h"

namespace tandem {

RealDriver::RealDriver(std::map<std::string, devices::Device*> devices) {
  devices.emplace("host", nullptr);
  for (auto& [name, device] : devices) {
    auto w = std::make_unique<Worker>();
    w->name = name;
    w->device = device;
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
    Done d{t->id, Status::Ok(), TaskTiming{t->id, w.name, now(), 0}, 0.0};
    if (t->host_step) {
      t->host_step();
    } else {
      auto c = w.device->submit(*t->call);
      if (!c.ok()) {
        d.status = c.status();
      } else {
        d.status = (*c)->wait();
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
    done_cv_.wait(lock, [&] { return !done_.empty(); });
    while (!done_.empty()) {
      Done d = std::move(done_.front());
      done_.pop_front();
      --in_flight;
      ++finished;
      const Task& t = tasks[size_t(d.task)];
      stats_.tasks++;
      stats_.host_bytes_copied += t.host_bytes;
      stats_.busy_seconds[t.device] += d.timing.end_s - d.timing.start_s;
      stats_.device_seconds[t.device] += d.device_seconds;
      timings_.push_back(d.timing);
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
  if (first_error.ok() && finished != tasks.size()) return Internal("driver: not every task ran (a dependency cycle?)");
  return first_error;
}

}  // namespace tandem
