// The opencl device (the GPU role) behind the device contract: every op enqueued
// asynchronously on the OpenCL queue. Host memory is mapped, not copied: map the shared
// memory pool once (map_shared_memory) and every pointer inside it resolves to that buffer plus an
// offset; a pointer outside registered memory is wrapped for the one call.
#pragma once

#include <memory>
#include <vector>

#include "devices/device.h"
#include "devices/opencl/cl_ops.h"
#include "devices/opencl/model_weights.h"

namespace tandem::devices {

class OpenclDevice final : public Device, public CompletionFlags, public MemoryTraffic {
 public:
  // Maps the model's weights once (model may be null: listing only); fails with a clear
  // message when no OpenCL device exists.
  static Result<std::unique_ptr<OpenclDevice>> create(std::shared_ptr<const Model> model);
  std::string name() const override { return "opencl"; }
  DeviceCaps caps() const override;
  std::string identity() const override;
  bool supports(const OpCall& call) const override;
  Result<std::unique_ptr<Completion>> submit(const OpCall& call) override;

  Status map_shared_memory(void* base, size_t bytes) override;
  CompletionFlags* completion_flags() override { return this; }
  const MemoryTraffic* memory_traffic() const override { return this; }
  // The flag must lie in a mapped region (zero copy), so the host sees the kernel's store.
  bool use_completion_flag(uint64_t* flag) override;
  // Shadow copies the driver keeps of mapped buffers; it computes in fp32, converting nothing.
  uint64_t bytes_copied() const override { return ops_->runtime().bytes_copied(); }
  uint64_t bytes_converted() const override { return 0; }

 private:
  OpenclDevice() = default;
  // The buffer + offset of host memory [p, p + bytes); `temps` keeps per-call wraps alive.
  Result<opencl::BufRef> resolve(const void* p, size_t bytes, std::vector<opencl::Buffer>& temps);
  Status enqueue(const OpCall& c, std::vector<opencl::Buffer>& temps, opencl::Event* done);

  struct Region {
    const char* base;
    size_t bytes;
    opencl::Buffer buf;
  };
  std::shared_ptr<const Model> model_;
  std::shared_ptr<opencl::Ops> ops_;
  opencl::ModelWeights weights_;
  std::vector<Region> regions_;
  uint64_t* flag_ = nullptr;  // completion flag in the pool (fast sync), or null
  opencl::BufRef flag_ref_;
  uint64_t flag_seq_ = 0;
};

}  // namespace tandem::devices
