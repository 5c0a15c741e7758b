// Optional device capabilities, beside the core contract (device.h). A device implements the ones
// it has and returns itself from the matching accessor of Device (static_graphs(), ...); the
// runtime asks for a capability where it needs one and takes null as "this device has none". The
// core contract stays what every processor offers: identity, caps, supports, submit, completion,
// shared memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "graph/op.h"

namespace tandem::compile_cache {
class CompileCache;
}

namespace tandem::devices {

struct PrepareReport {
  bool cached = false;        // the graph was already built
  double prepare_seconds = 0; // cost of building it (measured, or modeled for an emulated NPU)
};

// Static graphs (NPUs): only shapes prepared ahead of time run; each is built once, cached, and
// its build cost reported.
class StaticGraphs {
 public:
  virtual ~StaticGraphs() = default;
  virtual Result<PrepareReport> prepare(const graph::GraphSpec& spec) = 0;
  virtual double prepare_seconds_total() const = 0;  // build time spent so far
  virtual uint64_t graphs_prepared() const = 0;      // graphs built so far
};

// Runs the programs of a compile cache (tandem compile) where the cache has the shape.
class CompiledPrograms {
 public:
  virtual ~CompiledPrograms() = default;
  virtual Status use_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) = 0;
  virtual uint64_t graphs_from_cache() const = 0;   // of the graphs built, those the cache supplied
  // Graphs built at run time because the cache had no program for them, and why the first was
  // not there ("" when none).
  virtual uint64_t graphs_not_cached() const = 0;
  virtual std::string first_not_cached() const = 0;
};

// Fast synchronization (HeteroInfer): the device writes a completion flag into shared memory after
// each kernel (8 bytes of the mapped pool, 0 at first; each kernel stores its sequence number
// there), and its completions' ready() then reads the flag instead of asking the driver. false:
// the device cannot here (the flag lies outside its mapped memory), ready() keeps asking.
class CompletionFlags {
 public:
  virtual ~CompletionFlags() = default;
  virtual bool use_completion_flag(uint64_t* flag) = 0;
};

// A device with memory or a precision of its own: the bytes it moved besides computing.
class MemoryTraffic {
 public:
  virtual ~MemoryTraffic() = default;
  // Bytes copied between host and device memory so far (0 on unified memory used in place).
  virtual uint64_t bytes_copied() const = 0;
  // fp32 bytes of the shared pool converted to or from the device's own precision so far (a
  // device computing in fp16 reads and writes the pool's fp32 activations through fp16 staging),
  // counted on the pool's side.
  virtual uint64_t bytes_converted() const = 0;
};

}  // namespace tandem::devices
