// The RealDriver runs a TaskGraph on real (or emulated) devices: one worker thread per device
// runs that device's tasks in dependency order, so the GPU and NPU parts of a split op run at the
// same time; host merge steps run on a worker of their own.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/task_graph.h"

namespace tandem {

struct DriverStats {
  uint64_t tasks = 0;
  uint64_t host_bytes_copied = 0;           // bytes moved by merge steps (padding)
  std::map<std::string, double> busy_seconds;  // per device: wall time inside its tasks
  std::map<std::string, double> device_seconds;  // per device: time the device reports (modeled for the npu)
};

// One finished task, for traces.
struct TaskTiming {
  int task = -1;
  std::string device;
  double start_s = 0, end_s = 0;  // since the driver was created
};

class RealDriver {
 public:
  explicit RealDriver(std::map<std::string, devices::Device*> devices);
  ~RealDriver();
  RealDriver(const RealDriver&) = delete;
  RealDriver& operator=(const RealDriver&) = delete;

  // Runs every task; the first failure stops new dispatches and is returned once in-flight tasks
  // have finished. Stats and timings accumulate across runs.
  Status run(const TaskGraph& g);
  const DriverStats& stats() const { return stats_; }
  const std::vector<TaskTiming>& timings() const { return timings_; }

 private:
  struct Worker {
    std::string name;
    devices::Device* device = nullptr;  // null for "host"
    std::deque<const Task*> queue;
    std::thread thread;
  };
  struct Done {
    int task;
    Status status;
    TaskTiming timing;
    double device_seconds;
  };
  void worker_loop(Worker& w);
  double now() const;

  std::map<std::string, std::unique_ptr<Worker>> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Done> done_;
  bool stop_ = false;
  DriverStats stats_;
  std::vector<TaskTiming> timings_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace tandem
