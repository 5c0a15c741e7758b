// The cpu device behind the device contract: runs every op at any shape, at once, on its
// thread pool (submit() returns finished work).
#pragma once

#include <vector>

#include "core/thread_pool.h"
#include "devices/device.h"

namespace tandem::devices {

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int n_threads) : pool_(n_threads) {}
  std::string name() const override { return "cpu"; }
  DeviceCaps caps() const override;
  bool supports(const OpCall& call) const override;
  Result<std::unique_ptr<Completion>> submit(const OpCall& call) override;

 private:
  void run(const OpCall& call);
  ThreadPool pool_;
  std::vector<float> attention_scratch_;  // grows to the largest attention seen, then reused
};

}  // namespace tandem::devices
