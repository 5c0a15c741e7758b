// The decoder on one device: every op of the graph submitted in order to that device through the
// contract, and waited for. A cpu-only run is this over the cpu device (`tandem run` without
// --devices); opencl-only and npu-only runs are this over theirs. Several devices at once go
// through a partition and the driver instead (runtime/hetero_forward.h).
#pragma once

#include <memory>

#include "devices/device.h"
#include "runtime/decoder_forward.h"

namespace tandem {

class GraphForward final : public DecoderForward {
 public:
  // The device maps the pool here (unified memory: no op copies anything).
  // n_sequences: independent KV caches of `context` positions each (eval_sequences).
  static Result<std::unique_ptr<GraphForward>> create(std::shared_ptr<const Model> model,
                                                      std::unique_ptr<devices::Device> device, int context,
                                                      int max_batch, KvTypes kv = {}, int n_sequences = 1);
  devices::Device& device() { return *device_; }
  ExecutionReport execution_report() const override;

 private:
  using DecoderForward::DecoderForward;
  bool runs_mixed_chunks() const override { return true; }
  Status run_ops(const std::vector<graph::OpCall>& ops) override;
  std::unique_ptr<devices::Device> device_;
  bool one_job_projections_ = false;  // the device's caps: rmsnorm + projections go as norm_linear
  DeviceUsage usage_;
  std::string kv_note_;  // the cache's types and layout (ExecutionReport::kv)
};

// What a cpu-only forward is sized by.
struct CpuForwardOptions {
  int n_threads = 2;
  int context = 0;      // KV cache length in tokens; 0: min(model context, 4096)
  int max_batch = 512;  // tokens per prefill chunk
  int sequences = 1;    // KV caches of `context` positions each (a server's slots)
};

// The decoder on the cpu device: the default when no --devices is given.
Result<std::unique_ptr<GraphForward>> make_cpu_forward(std::shared_ptr<const Model> model, CpuForwardOptions options,
                                                       KvTypes kv = {});

}  // namespace tandem
