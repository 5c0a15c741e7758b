// A forward pass that runs the transformer's op list (graph/) on any one device through the
// device contract. The heterogeneous executor builds on the same op list; this single-device
// form is what every device must get right first (it is tested against the cpu fast path).
#pragma once

#include <memory>
#include <span>

#include "devices/device.h"
#include "graph/transformer_graph.h"
#include "runtime/forward.h"
#include "runtime/memory_pool.h"

namespace tandem {

class GraphForward final : public Forward {
 public:
  // context 0: min(model context, 4096). The device's shared memory is registered here.
  static Result<std::unique_ptr<GraphForward>> create(std::shared_ptr<const Model> model,
                                                      std::unique_ptr<devices::Device> device, int context,
                                                      int max_batch);
  Status eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits = false) override;
  devices::Device& device() { return *device_; }
  std::string memory_report() const override { return memory_.describe(); }
  ExecutionReport execution_report() const override;
  int context() const override { return buffers_.context; }

 private:
  GraphForward() = default;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<devices::Device> device_;
  MemoryPool memory_;
  graph::Buffers buffers_;
  DeviceUsage usage_;
};

}  // namespace tandem
