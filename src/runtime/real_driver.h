// The RealDriver runs a TaskGraph on real (or emulated) devices: one worker thread per device
// runs that device's tasks in dependency order, so the GPU and NPU parts of a split op run at the
// same time; host merge steps run on a worker of their own.
//
// Queue-ahead: every device runs its queue in order (the OpenCL device's command queue is
// in-order and flushed on submit; the cpu and npu run submit() inline on their worker), so a task
// goes to its device's queue as soon as each dependency has finished *or* was already queued on
// the same device. Only cross-device edges and host steps wait for a completion (HeteroInfer's
// NPU-dominant prefill and GPU-dominant decode queue whole runs of kernels ahead). A worker submits
// every kernel in its queue without waiting, keeps the completions in order, and reports each as
// it completes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/sync/latency_predictor.h"
#include "runtime/sync/protocol_choice.h"
#include "runtime/sync/sync_mode.h"
#include "runtime/sync/wait_policy.h"
#include "runtime/task_graph.h"

namespace tandem {

struct DriverStats {
  uint64_t tasks = 0;
  uint64_t host_bytes_copied = 0;           // bytes moved by merge steps (padding)
  std::map<std::string, uint64_t> tasks_per_device;
  std::map<std::string, double> busy_seconds;  // per device: wall time inside its tasks
  std::map<std::string, double> device_seconds;  // per device: time the device reports (modeled for the npu)
  uint64_t fast_waits = 0, fast_fallbacks = 0;    // fast sync: waits, and those that fell back to blocking
  // With --sync fast, waits the measured choice gave the blocking protocol, and waits on devices
  // that compute on every host core (polling them would steal the core they need): blocking.
  uint64_t blocking_by_choice = 0, blocking_no_free_core = 0;
  // Completions that were done when the worker came to them (every inline cpu/npu kernel, and an
  // async kernel that completed while its worker submitted or waited on others): no wait, and
  // nothing for the fast-sync predictor to learn. Every kernel is one of these or one wait above.
  uint64_t found_complete = 0;
  uint64_t rerun_on_fallback = 0;                  // kernels a device failed that ran again on their fallback
  // Kernels put in their device's queue while a same-device dependency was still in flight (an
  // async device had them submitted behind it; an inline device ran them back to back).
  uint64_t queued_ahead = 0;
  std::map<std::string, uint64_t> queued_ahead_per_device;
  // Kernels that were queued behind a kernel their device failed: their results were discarded
  // and they ran again after the failed kernel's rerun.
  uint64_t discarded_behind_failure = 0;
};

// One finished task, for traces. Seconds since the driver was created.
struct TaskTiming {
  int task = -1;
  std::string device;  // "sync" for the scheduler's waits between completions
  std::string name;    // the task's label
  double queued_s = 0;  // put in its device's queue (= start_s for "sync")
  // start: when it could start, max(submitted, the device's previous completion); end: when its
  // completion was seen. Busy time counts start..end, not the time queued.
  double start_s = 0, end_s = 0;
  bool queued_ahead = false;  // queued while a same-device dependency was in flight
  bool discarded = false;     // ran behind a failed kernel: result thrown away, ran again
  // The device's own time for the kernel (Completion::device_seconds: OpenCL's event profiling,
  // the npu's modeled time), 0 when it reports none. start..end is what the host saw: the kernel
  // and the notice of its completion.
  double device_s = 0;
};

class RealDriver {
 public:
  // poll_host_devices: fast sync polls even devices that compute on every host core (see
  // HeteroOptions::poll_host_devices).
  explicit RealDriver(std::map<std::string, devices::Device*> devices, SyncMode sync = SyncMode::kBlocking,
                      bool poll_host_devices = false);
  ~RealDriver();
  RealDriver(const RealDriver&) = delete;
  RealDriver& operator=(const RealDriver&) = delete;

  // Runs every task. A kernel that fails on its device runs again on the task's fallback device
  // (a warning is printed once); any other failure stops new dispatches and is returned once
  // in-flight tasks have finished. Stats accumulate across runs; timings keep the most recent
  // kMaxTimings entries (a trace of a long generation stays bounded).
  Status run(const TaskGraph& g);
  const DriverStats& stats() const { return stats_; }
  const std::vector<TaskTiming>& timings() const { return timings_; }
  // Writes every run so far as a Chrome trace (Perfetto opens it): one track per device, one for
  // host merge steps, one for the scheduler ("sync") waiting on completions, and a counter per
  // device ("<device> queue") with the kernels waiting in its queue; each kernel's args say when it
  // was queued and how long it waited, and the device's own time for it (device_us).
  Status write_trace(const std::string& path) const;
  static constexpr size_t kMaxTimings = 1u << 20;

 private:
  struct Worker {
    std::string name;
    devices::Device* device = nullptr;  // null for "host"
    bool polling_pays = false;  // a core is free to poll this device's flag (it does not compute on them all)
    struct Queued {
      const Task* task;
      double queued_s;
      bool queued_ahead;
    };
    std::deque<Queued> queue;  // dispatched, not yet submitted
    std::thread thread;
  };
  struct Done {
    int task;
    Status status;
    TaskTiming timing;
    double device_seconds;
  };
  void worker_loop(Worker& w);
  struct InFlight;
  // Reports the oldest in-flight kernel (its status from `status`) as Done.
  void report(Worker& w, InFlight& f, Status status, double& prev_end);
  Status wait_for(devices::Completion& c, const Task& t, const Worker& w);  // by the sync mode
  double now() const;
  void record(TaskTiming t);  // appends, dropping the oldest half when full

  SyncMode sync_;
  sync::LatencyPredictor predictor_{1.0};  // the previous kernel of the same shape predicts the next
  sync::FastWaitParams fast_params_;
  sync::ProtocolChooser chooser_;  // fast or blocking per handoff class, by measurement
  std::atomic<uint64_t> fast_waits_{0}, fast_fallbacks_{0}, blocking_by_choice_{0}, blocking_no_free_core_{0},
      found_complete_{0};
  std::map<std::string, std::unique_ptr<Worker>> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Done> done_;
  bool stop_ = false;
  DriverStats stats_;
  std::vector<TaskTiming> timings_;
  bool warned_fallback_ = false;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace tandem
