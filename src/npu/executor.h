// Executor: runs a Program on the host, functionally (fp16 semantics on a TCM byte array, DDR
// buffers bound by the caller as host memory, zero copy) and/or timed (the concurrent unit model
// described in program.h, charged with CostModel costs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "npu/cost_model.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu {

struct ExecOptions {
  bool functional = true;  // move bytes and compute (needs every DMA'd buffer bound)
  bool timing = true;      // modeled cycles
};

struct ExecReport {
  double total_cycles = 0;
  double seconds = 0;
  double issue_cycles = 0;          // scalar core issuing
  double issue_stall_cycles = 0;    // scalar core blocked in wait/barrier
  double dma_busy_cycles = 0;       // summed over channels
  std::vector<double> matrix_busy_cycles;  // per array
  double vector_busy_cycles = 0;
  uint64_t dma_bytes_in = 0, dma_bytes_out = 0, dma_transfers = 0;
  uint64_t mma_ops = 0, stationary_swaps = 0, vec_ops = 0;
  double flops = 0;            // matrix FLOPs (padded tiles included: that is what the array does)
  double vector_lane_ops = 0;
  double energy_j = 0;
  double matrix_busy_total() const;
  std::string summary() const;  // one human line
};

class Executor {
 public:
  explicit Executor(const TargetModel& t);

  // Binds program buffer `id` to host memory (zero copy). Const memory may only be DMA-loaded.
  void bind(uint32_t id, void* data, size_t bytes);
  void bind_const(uint32_t id, const void* data, size_t bytes);
  void unbind_all() { bindings_.clear(); }

  // verify()s the program first; a Status if it is invalid or a needed buffer is unbound/small.
  Result<ExecReport> run(const Program& p, const ExecOptions& opt = {});

  std::vector<uint8_t>& tcm() {  // the TCM image (allocated here if no functional run did yet)
    if (tcm_.empty()) tcm_.assign(t_.tcm.bytes, 0);
    return tcm_;
  }
  const CostModel& cost() const { return cost_; }

 private:
  struct Binding {
    uint8_t* data = nullptr;
    const uint8_t* cdata = nullptr;
    size_t bytes = 0;
  };
  void exec_functional(const Program& p, const Instr& in);
  void exec_mma(const MmaArgs& m);
  void exec_vec(const VecArgs& v);

  const TargetModel& t_;
  CostModel cost_;
  std::vector<uint8_t> tcm_;
  // Scratch of the functional model, kept between instructions (no allocation per tile op).
  std::vector<float> mma_a_, mma_b_, mma_out_, vec_tmp_;
  std::vector<uint8_t> vec_blocks_;
  std::vector<Binding> bindings_;
};

}  // namespace tandem::npu
