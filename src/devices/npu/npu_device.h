// The npu device behind the device contract: the NPU model of src/npu (functional fp16 executor
// + timing from the target's cost model). Like a real NPU it runs only graphs prepared ahead of
// time for a static shape and refuses anything else; prepare() is charged the target's
// graph-build cost and cached.
#pragma once

#include <map>
#include <mutex>

#include "devices/device.h"
#include "npu/oplib/matmul.h"
#include "npu/target_model.h"

namespace tandem::devices {

class NpuDevice final : public Device {
 public:
  explicit NpuDevice(npu::TargetModel target) : target_(std::move(target)) {}
  std::string name() const override { return "npu"; }
  DeviceCaps caps() const override;
  bool supports(const OpCall& call) const override;  // matmuls of a prepared shape and type
  Result<PrepareReport> prepare(const GraphSpec& spec) override;
  Result<std::unique_ptr<Completion>> submit(const OpCall& call) override;
  double prepare_seconds_total() const override { return prepare_total_; }

  static bool weight_type_supported(DType t);

 private:
  npu::TargetModel target_;
  std::map<std::string, npu::oplib::PreparedMatmul> graphs_;
  double prepare_total_ = 0;
};

}  // namespace tandem::devices
