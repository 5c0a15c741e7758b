// Injected device faults, for tests and failure drills: a decorator around any device that makes
// its graph builds fail, or every Nth kernel it runs fail after the work was submitted (the
// completion reports the failure, as a real NPU's would). The executor must survive both:
// the failed part runs on another device and the output does not change.
//
// The plan is text, from TANDEM_NPU_FAULT or --npu-fault:
//   prepare   every prepare() fails
//   run       every submitted kernel fails
//   run:N     every Nth submitted kernel fails (N >= 1)
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "devices/device.h"

namespace tandem::devices {

struct FaultPlan {
  bool fail_prepare = false;
  int fail_run_every = 0;  // 0: runs never fail
  bool any() const { return fail_prepare || fail_run_every > 0; }
};

// `source` names where the text came from (an environment variable or a flag) for the error.
Result<FaultPlan> parse_fault_plan(const std::string& text, const std::string& source);

// Wraps every capability of the inner device (and only those): prepare() is where build faults
// are injected; the rest forwards.
class FaultInjectingDevice final : public Device, public StaticGraphs, public CompiledPrograms, public MemoryTraffic {
 public:
  FaultInjectingDevice(std::unique_ptr<Device> inner, FaultPlan plan) : inner_(std::move(inner)), plan_(plan) {}
  std::string name() const override { return inner_->name(); }
  DeviceCaps caps() const override { return inner_->caps(); }
  std::string identity() const override { return inner_->identity(); }
  bool supports(const OpCall& call) const override { return inner_->supports(call); }
  Result<std::unique_ptr<Completion>> submit(const OpCall& call) override;
  Status map_shared_memory(void* base, size_t bytes) override { return inner_->map_shared_memory(base, bytes); }
  StaticGraphs* static_graphs() override { return inner_->static_graphs() ? this : nullptr; }
  CompiledPrograms* compiled_programs() override { return inner_->compiled_programs() ? this : nullptr; }
  const MemoryTraffic* memory_traffic() const override { return inner_->memory_traffic() ? this : nullptr; }

  Result<PrepareReport> prepare(const GraphSpec& spec) override;
  double prepare_seconds_total() const override { return inner_->static_graphs()->prepare_seconds_total(); }
  uint64_t graphs_prepared() const override { return inner_->static_graphs()->graphs_prepared(); }
  Status use_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) override {
    return inner_->compiled_programs()->use_compile_cache(std::move(cache));
  }
  uint64_t graphs_from_cache() const override { return inner_->compiled_programs()->graphs_from_cache(); }
  uint64_t graphs_not_cached() const override { return inner_->compiled_programs()->graphs_not_cached(); }
  std::string first_not_cached() const override { return inner_->compiled_programs()->first_not_cached(); }
  uint64_t bytes_copied() const override { return devices::bytes_copied(*inner_); }
  uint64_t bytes_converted() const override { return devices::bytes_converted(*inner_); }
  uint64_t faults_injected() const { return injected_.load(); }

 private:
  std::unique_ptr<Device> inner_;
  FaultPlan plan_;
  std::atomic<uint64_t> submitted_{0}, injected_{0};
};

}  // namespace tandem::devices
