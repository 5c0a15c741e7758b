// The forward pass across several devices at once: each chunk's op list is lowered by the
// partition strategy into a TaskGraph that the RealDriver runs on the GPU, NPU and host workers.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "devices/device.h"
#include "runtime/decoder_forward.h"
#include "runtime/device_roles.h"
#include "runtime/partition.h"
#include "runtime/real_driver.h"

namespace tandem {

namespace compile_cache {
class CompileCache;
}

struct HeteroOptions {
  // The devices by name (any set the registry opens: cpu, opencl, npu). Their roles come from
  // their kinds: the npu takes the NPU's, the GPU (else the cpu) the GPU's; an op the GPU's device
  // does not support runs on the cpu when the set has one. Empty: partition.gpu and partition.npu.
  std::vector<std::string> devices;
  PartitionOptions partition;  // its gpu / npu / fallbacks are set from the devices' roles
  int context = 0;      // 0: min(model context, 4096)
  int max_batch = 512;  // tokens per chunk
  int n_threads = 2;    // for a cpu device, if one is used
  KvTypes kv_types;     // the cache's element types (an npu owns only an f16 one)
  SyncMode sync = SyncMode::kFast;
  // Poll even devices that compute on every host core (normally waited on blocking, since the
  // poll takes a core they need): for tests of the polling path and for measuring what it costs.
  bool poll_host_devices = false;
  // Injected NPU faults (devices/fault_injection.h): "prepare", "run" or "run:N"; empty takes
  // TANDEM_NPU_FAULT from the environment, if set.
  std::string npu_fault;
  // Compiled NPU programs (tandem compile); matmul shapes it holds run them (devices/npu/npu_device.h).
  std::shared_ptr<const compile_cache::CompileCache> npu_cache;
  // Chooses each matmul's strategy once the devices are open and have their roles and before any
  // runs (the CLI's default: the solver over this device set's cached profile). Called only with
  // an npu in the set; its decider replaces partition.decider and its summary is the report's plan.
  struct PlanChoice {
    Decider decider;
    std::string summary;                 // which plan, and from what, for `-v`
    std::function<std::string()> taken;  // the plan's entries the run took so far and why (may be empty)
  };
  std::function<Result<PlanChoice>(const std::map<std::string, devices::Device*>& devices, const DeviceRoles& roles)> choose_plan;
};

class HeteroForward final : public DecoderForward {
 public:
  // Opens the devices, gives each its role and maps the shared memory pool on every one.
  static Result<std::unique_ptr<HeteroForward>> create(std::shared_ptr<const Model> model, HeteroOptions options);
  const DriverStats& stats() const { return driver_->stats(); }
  const std::vector<TaskTiming>& timings() const { return driver_->timings(); }
  ExecutionReport execution_report() const override;
  // NPU parts placed on the GPU because the NPU could not prepare their graph (per chunk lowered).
  int fallbacks() const { return partitioner_->fallbacks(); }
  // NPU kernels that failed at run time and ran again on the GPU.
  uint64_t run_fallbacks() const { return driver_->stats().rerun_on_fallback; }
  double prepare_seconds() const;       // NPU graph builds so far (modeled)
  const TaskGraph& last_graph() const { return graph_; }
  Status write_trace(const std::string& path) const override { return driver_->write_trace(path); }

 private:
  using DecoderForward::DecoderForward;
  Status run_ops(const std::vector<graph::OpCall>& ops) override;
  std::map<std::string, std::unique_ptr<devices::Device>> devices_;
  std::unique_ptr<Partitioner> partitioner_;
  std::unique_ptr<RealDriver> driver_;
  TaskGraph graph_;
  HeteroOptions options_;
  std::vector<std::string> flag_devices_;  // devices raising a completion flag in the pool
  HeteroOptions::PlanChoice plan_;         // what choose_plan gave, if it was called
  std::string kv_note_;                    // where the KV lives and why (ExecutionReport::kv)
  // The first compiled program the npu refused for failing its integrity check: the run stops with
  // it (a changed program is never worked around by running that part elsewhere).
  Status refused_;
  std::string device_note_;                // how the set was completed (a static-shape device alone), or ""
  devices::Device* npu_ = nullptr;  // the device in the NPU's role (under any fault injector); null when none
};

}  // namespace tandem
