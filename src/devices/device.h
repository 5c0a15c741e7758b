// The device contract: what every processor tandem runs on offers to the executor.
//
// Small on purpose (ggml-backend style): identity and capabilities, `supports()` per call,
// asynchronous `submit()` returning a completion, and, for static-graph devices (NPUs),
// `prepare()` of a graph for one static shape, cached, with its cost measured and reported.
// Invariant checks that hold for every device (shapes, ranges, static-shape refusal) live in
// validate_call() beside the contract, not in each device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/op.h"
#include "model/model.h"

namespace tandem::compile_cache {
class CompileCache;
}

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

struct PrepareReport {
  bool cached = false;        // the graph was already built
  double prepare_seconds = 0; // cost of building it (measured, or modeled for an emulated NPU)
};

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
  // Static-graph devices build graphs here; dynamic devices need not override it.
  virtual Result<PrepareReport> prepare(const GraphSpec& spec);
  // Total prepare time spent so far (reported by tools).
  virtual double prepare_seconds_total() const { return 0.0; }
  // Fast synchronization (HeteroInfer): a device that can write a completion flag into shared
  // memory after each kernel does so into `flag` (8 bytes of the mapped pool, 0 at first; each
  // kernel stores its sequence number there), and its completions' ready() then reads the flag
  // instead of asking the driver. false: the device cannot, ready() keeps asking the driver.
  virtual bool use_completion_flag(uint64_t* flag) { return false; }
  // Bytes copied between host and device memory so far (0 on unified memory used in place).
  virtual uint64_t bytes_copied() const { return 0; }
  // fp32 bytes of the shared pool converted to or from the device's own precision so far (a
  // device computing in fp16 reads and writes the pool's fp32 activations through fp16 staging):
  // bytes moved besides the copies, counted on the pool's side.
  virtual uint64_t bytes_converted() const { return 0; }
  // Static-graph devices: graphs built so far, and of those, programs a compile cache supplied.
  virtual uint64_t graphs_prepared() const { return 0; }
  virtual uint64_t graphs_from_cache() const { return 0; }
  // With a compile cache: graphs built at run time because the cache had no program for them, and
  // why the first was not there ("" when none).
  virtual uint64_t graphs_not_cached() const { return 0; }
  virtual std::string first_not_cached() const { return ""; }
  // Runs the compiled programs of `cache` where it has the shape (optional: devices that run no
  // compiled programs refuse).
  virtual Status use_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) {
    return Unsupported(name() + ": runs no compiled NPU programs (--npu-cache needs an npu)");
  }
};

}  // namespace tandem::devices
