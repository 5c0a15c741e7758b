// A TaskGraph: the work of one forward chunk as tasks (a device + a kernel call, or a host merge
// step) with dependencies. Partition executors build it from the op list and a strategy; the
// RealDriver runs it on device worker threads (and the SimDriver, later, in virtual time), so it
// holds no wall-clock assumptions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "devices/device.h"

namespace tandem {

struct Task {
  int id = -1;
  std::string device;                   // "cpu", "opencl", "npu", or "host" for merge steps
  std::optional<graph::OpCall> call;  // the kernel (device tasks)
  std::function<void()> host_step;      // the merge step (host tasks): copies for padding
  uint64_t host_bytes = 0;              // bytes a host step moves (reported as copies)
  std::vector<int> deps;                // tasks that must finish first
  // Where the kernel runs instead if `device` fails it (an NPU fault): empty for none. Only set
  // for kernels that are safe to run again (their output is not also an input).
  std::string fallback_device;
  std::string label;                    // for traces and dumps: "blk.3.attn_q npu rows 0:256"
};

// What predicts a kernel's duration: the unit and the op's shape, not its layer (every decoder
// layer runs the same shapes). The fast-sync predictors of both drivers key on it.
std::string task_shape_key(const Task& t, const std::string& unit);

class TaskGraph {
 public:
  int add(Task t);  // assigns the id; deps must name earlier tasks
  const std::vector<Task>& tasks() const { return tasks_; }
  size_t size() const { return tasks_.size(); }
  Status verify() const;     // deps point backwards, every task has exactly one kind of work
  std::string dump() const;  // one line per task
  void clear() { tasks_.clear(); }

 private:
  std::vector<Task> tasks_;
};

}  // namespace tandem
