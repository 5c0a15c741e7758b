// The cpu device behind the device contract: runs every op at any shape, at once, on its
// thread pool (submit() returns finished work).
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "devices/cpu/matmul/packed_weight.h"
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
  // The decode copy of a block-quantized weight (packed_weight.h), made on its first matmul
  // and kept for the device's life; null where this CPU or type has no packed kernels.
  const cpu::PackedWeight* packed_for_decode(const Weight& w);
  // Rows [row_begin, row_end) of w as the matmul sees them (packed attached in int8 decode).
  cpu::WeightView view_of(const Weight& w, int64_t row_begin, int64_t row_end);

  ThreadPool pool_;
  std::mutex packed_mu_;  // submit() may be called from a device worker and the host thread
  std::unordered_map<const uint8_t*, std::unique_ptr<cpu::PackedWeight>> packed_;
  cpu::PackedArena packed_arena_;
  std::vector<float> attention_scratch_;  // grows to the largest attention seen, then reused
};

}  // namespace tandem::devices
