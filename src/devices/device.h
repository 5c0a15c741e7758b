// The device contract: what every processor tandem runs on offers to the executor.
//
// Small on purpose (ggml-backend style): identity and capabilities, `supports()` per call,
// asynchronous `submit()` returning a completion, and the shared memory pool mapped once. What
// only some devices do -- static graphs prepared per shape (NPUs), compiled programs from a
// compile cache, completion flags, staged memory -- are optional capability interfaces
// (devices/capabilities.h) that a device implements and the runtime asks for.
// Invariant checks that hold for every device (shapes, ranges, static-shape refusal) live in
// validate_call() beside the contract, not in each device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "devices/capabilities.h"
#include "graph/op.h"
#include "model/model.h"

namespace tandem::devices {

enum class DeviceKind { kCpu, kGpu, kNpu };
const char* device_kind_name(DeviceKind k);

struct DeviceCaps {
  DeviceKind kind = DeviceKind::kCpu;
  bool dynamic_shapes = true;   // false: only shapes prepared ahead of time run
  bool unified_memory = true;   // host memory is mapped by the device, never copied
  bool async = false;           // submit() returns before the work is done
  std::string detail;           // one line: ISA, OpenCL version, NPU target, ...
  // The device's work runs on the host's cores, all of them (the cpu device, PoCL's CPU OpenCL,
  // the emulated NPU): a thread spinning on its completion takes a core it needs.
  bool computes_on_host_cores = true;
  // A norm_linear's projections run as one job (the cpu: one dispatch for q, k and v in decode),
  // so a one-device forward hands it each rmsnorm and the projections reading it fused.
  bool one_job_projections = false;
};

// The ops (graph/op.h) are the graph's vocabulary; devices receive them by these names.
using graph::Act;
using graph::GraphSpec;
using graph::OpCall;
using graph::OpKind;
using graph::op_kind_name;
using graph::validate_call;

// Completion of submitted work. wait() returns the work's status (a failed kernel reports here).
class Completion {
 public:
  virtual ~Completion() = default;
  virtual Status wait() = 0;
  virtual bool ready() = 0;
  // Time the device spent on the work: measured, or modeled for an emulated device.
  virtual double device_seconds() const = 0;
};

// Work that had already finished when submit() returned (devices that run synchronously on
// their worker thread: the cpu, the emulated npu).
class FinishedCompletion final : public Completion {
 public:
  FinishedCompletion(Status status, double seconds) : status_(std::move(status)), seconds_(seconds) {}
  Status wait() override { return status_; }
  bool ready() override { return true; }
  double device_seconds() const override { return seconds_; }

 private:
  Status status_;
  double seconds_;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual DeviceCaps caps() const = 0;
  // What the device is, stable from run to run (caps().detail may carry figures that move, such as
  // the memory an OpenCL driver reports free): what measurements of it are keyed on.
  virtual std::string identity() const { return caps().detail; }
  virtual bool supports(const OpCall& call) const = 0;
  virtual Result<std::unique_ptr<Completion>> submit(const OpCall& call) = 0;
  // Maps a block of the shared memory pool for the device (once, up front): afterwards every
  // pointer inside it is used in place. Devices that address host memory directly need nothing.
  virtual Status map_shared_memory(void* base, size_t bytes) { return Status::Ok(); }

  // Optional capabilities (devices/capabilities.h): the device itself where it has one, else null.
  virtual StaticGraphs* static_graphs() { return nullptr; }
  virtual CompiledPrograms* compiled_programs() { return nullptr; }
  virtual CompletionFlags* completion_flags() { return nullptr; }
  virtual const MemoryTraffic* memory_traffic() const { return nullptr; }
};

// What the runtime asks of any device, answered from its capabilities: a dynamic-shape device
// (no StaticGraphs) runs any shape as it comes, so preparing is a no-op; a device without
// MemoryTraffic moved nothing besides computing.
Result<PrepareReport> prepare_graph(Device& d, const GraphSpec& spec);
uint64_t bytes_copied(const Device& d);
uint64_t bytes_converted(const Device& d);

}  // namespace tandem::devices
