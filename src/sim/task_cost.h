// What one task of a TaskGraph costs on a modeled SoC: its duration when it runs alone, the DRAM
// bytes it moves (the simulator shares bandwidth between concurrent tasks by these), and, for the
// NPU, the energy its own cost model reports.
//
// On the phone activations and the KV cache are fp16 (W4A16), so byte counts use 2-byte
// activations whatever the host buffers hold; weights count in their stored type. By the unit's
// kind (sim/soc_model.h), with the unit's own numbers:
//   gpu/cpu matmul   kernel_fixed_s + the unit's fitted latency model's byte and FLOP terms (SEEDS
//                    GPU-1); the fit's fixed term is the isolated kernel's clFinish round trip
//                    (GPU-2), which a queued kernel does not pay
//   gpu/cpu others   kernel_fixed_s + bytes / the unit's DRAM cap + FLOPs / achieved FLOPS
//   npu matmul       the unit's npu::TargetModel cost model (the operator library's program for
//                    that static shape -- or, given a compile cache, the compiler's program for it
//                    where the cache has one -- timed by the Executor, as the npu device reports
//                    it) scaled by the unit's calibration (stack efficiency, NPU-3 shape penalty)
//   npu rmsnorm/     the target model alone (the profile points measure matmuls only), on the
//   swiglu/add       compiled program where the cache has one
//   host steps       bytes / the host's memcpy bandwidth
#pragma once

#include <map>
#include <memory>
#include <string>

#include "compile_cache/cache.h"

#include "npu/oplib/matmul.h"
#include "runtime/task_graph.h"
#include "sim/soc_model.h"

namespace tandem::sim {

struct TaskCost {
  double seconds = 0;     // alone, without DRAM contention
  double dram_bytes = 0;  // traffic through DRAM
  double flops = 0;
  double npu_energy_j = 0;  // NPU tasks: dynamic + static energy from the NPU cost model
};

class TaskCostModel {
 public:
  explicit TaskCostModel(const SocModel& soc) : soc_(soc) {}
  // kWeightStationary: matmuls without the order exchange (SEEDS NPU-2), for the ablation's "naive NPU".
  void set_npu_order(npu::oplib::MatmulOrder order) { npu_order_ = order; npu_cache_.clear(); }
  // `unit`: one of the SoC's units, or null for the host (host steps only). Errors name the task
  // when the unit cannot run its op (rope on the NPU, a kernel on the host, ...).
  Result<TaskCost> cost(const Task& task, const ComputeUnit* unit);
  // Bytes and FLOPs of an op at fp16 activations (shared by every unit).
  static void traffic(const graph::OpCall& call, double* bytes, double* flops);
  size_t npu_programs_timed() const { return npu_cache_.size(); }
  // The compiler's programs: an NPU task whose static shape the cache holds is timed on that
  // program (its bytes checked against the manifest) instead of the operator library's. The
  // cache must be compiled for the NPU unit's target (the caller checks its key).
  void set_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) {
    compile_cache_ = std::move(cache);
    npu_cache_.clear();
  }
  // Distinct NPU shapes timed on compiled programs and on the library's, and the first of the
  // latter with why the cache had no program for it.
  size_t npu_shapes_compiled() const { return shapes_compiled_; }
  size_t npu_shapes_library() const { return shapes_library_; }
  const std::string& first_not_compiled() const { return first_not_compiled_; }

 private:
  Result<TaskCost> npu_cost(const graph::OpCall& call, const ComputeUnit& unit);  // calibrated, cached
  Result<TaskCost> npu_raw_cost(const graph::OpCall& call, const npu::TargetModel& target);  // the target model alone
  // The cache's program for this call's static shape, or nullptr.
  const compile_cache::ProgramEntry* compiled_program(const graph::OpCall& call) const;
  Result<TaskCost> time_program(const npu::Program& program, const npu::TargetModel& target);
  const SocModel& soc_;
  npu::oplib::MatmulOrder npu_order_ = npu::oplib::MatmulOrder::kActivationStationary;
  std::map<std::string, std::string> target_fingerprints_;  // by unit
  std::map<std::string, TaskCost> npu_cache_;  // by unit and static shape: timing a program is not free
  std::shared_ptr<const compile_cache::CompileCache> compile_cache_;
  size_t shapes_compiled_ = 0, shapes_library_ = 0;
  std::string first_not_compiled_;
};

}  // namespace tandem::sim
