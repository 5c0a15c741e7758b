#include "npu/cost_model.h"

#include <algorithm>
#include <cmath>

namespace tandem::npu {

double CostModel::dma_cycles(uint64_t rows, uint64_t row_bytes) const {
  const double bytes = double(rows) * double(row_bytes);
  return t_.dma.setup_cycles + double(rows) * t_.dma.row_cycles + bytes / t_.dma_channel_bytes_per_cycle();
}

double CostModel::tile_stream_cycles() const { return t_.matrix.tile_dim / t_.matrix.stream_rows_per_cycle; }

double CostModel::stationary_swap_cycles() const {
  return t_.matrix.pipeline_fill_drain_cycles + t_.tile_bytes() / t_.matrix.stationary_load_bytes_per_cycle;
}

double CostModel::vector_cycles(VecOp op, uint64_t n) const {
  const double vectors = std::ceil(double(n) / t_.vector_lanes_per_cycle());
  return t_.vector.startup_cycles + vectors * t_.vector.op_cycles_per_vector[int(op)];
}

double CostModel::vector_lane_ops(VecOp op, uint64_t n) const {
  return double(n) * t_.vector.op_cycles_per_vector[int(op)];
}

double CostModel::issue_cycles(Opcode op) const {
  switch (op) {
    case Opcode::kDmaLoad:
    case Opcode::kDmaStore: return t_.issue.dma_cycles;
    case Opcode::kMma: return t_.issue.mma_cycles;
    case Opcode::kVec: return t_.issue.vec_cycles;
    default: return t_.issue.sync_cycles;
  }
}

double CostModel::energy_joules(double flops, double vector_lane_ops, double dma_bytes, double seconds) const {
  const auto& p = t_.power;
  return 1e-12 * (flops * p.matrix_pj_per_flop + vector_lane_ops * p.vector_pj_per_lane_op + dma_bytes * p.dma_pj_per_byte) +
         p.static_w * seconds;
}

double CostModel::pipelined_cycles(double d, double c, double w, uint64_t steps, bool double_buffered) {
  if (steps == 0) return 0;
  if (!double_buffered) return double(steps) * (d + c + w);
  return d + double(steps - 1) * std::max({d, c, w}) + c + w;
}

double CostModel::offload_switch_seconds(uint64_t bytes) const {
  return double(bytes) / t_.dma_bytes_per_s() + 2 * t_.seconds(signal_latency_cycles());
}

}  // namespace tandem::npu
