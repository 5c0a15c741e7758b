// CostModel: THE analytical cost model of the NPU, a thin API over TargetModel. The Executor's
// timed simulation charges exactly these costs, and the compiler's (future) schedulers must call
// the same functions, so a prediction and a simulated run can never disagree on a primitive.
//
// Model (all in NPU clock cycles):
//  * DMA transfer of rows x row_bytes on one channel: setup + rows x row_cycles +
//    bytes / (min(dma bandwidth, one processor's DDR share) / channels). Channels run concurrently.
//  * Matrix tile op (T x T x T): the streamed operand enters T rows at stream_rows_per_cycle
//    (T cycles for T=32); when the held operand B differs from the one already in the array, the
//    op first pays a swap: drain the pipeline (pipeline_fill_drain_cycles) and shift the new B in
//    (tile bytes / stationary_load_bytes_per_cycle). This is where operand order matters (NPU-2):
//    an op sequence that keeps B fixed over many A tiles amortizes the swap.
//  * Vector op on n elements: startup + ceil(n / (lanes x units)) x op_cycles_per_vector[op].
//  * Issue: each instruction costs the scalar core issue cycles; completions reach it after
//    signal_latency cycles.
#pragma once

#include <cstdint>

#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu {

class CostModel {
 public:
  explicit CostModel(const TargetModel& t) : t_(t) {}
  const TargetModel& target() const { return t_; }

  double dma_cycles(uint64_t rows, uint64_t row_bytes) const;
  double tile_stream_cycles() const;
  double stationary_swap_cycles() const;
  double tile_cycles(bool swap_stationary) const { return tile_stream_cycles() + (swap_stationary ? stationary_swap_cycles() : 0); }
  double vector_cycles(VecOp op, uint64_t n) const;
  double vector_lane_ops(VecOp op, uint64_t n) const;  // for energy: n x op cycles per vector
  double issue_cycles(Opcode op) const;
  double signal_latency_cycles() const { return t_.issue.signal_latency_cycles; }
  // Leaving the NPU for one op (a CPU/GPU fallback): `bytes` (its activation out and its result
  // back) through DDR at the NPU's DMA rate, and one cross-unit completion signal each way.
  // Weights stay where they are: every processor reads them from the same DDR.
  double offload_switch_seconds(uint64_t bytes) const;

  // Energy of a run: dynamic per-unit energy plus static power over the run time.
  double energy_joules(double flops, double vector_lane_ops, double dma_bytes, double seconds) const;

  // Steady-state bound of a tiled loop of `steps` identical steps, each loading d cycles of input,
  // computing c and writing back w (EdgeLLM-MLIR's d_i, c_i, w_i). Double-buffered: the prologue
  // load, then max(d, c, w) per step, then the last compute and write back; single-buffered: the
  // sum per step.
  static double pipelined_cycles(double d, double c, double w, uint64_t steps, bool double_buffered);

 private:
  const TargetModel& t_;
};

}  // namespace tandem::npu
