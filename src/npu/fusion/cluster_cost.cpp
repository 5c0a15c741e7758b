#include "npu/fusion/cluster_cost.h"

#include <algorithm>
#include <set>
#include <string>

#include "npu/cost_model.h"

namespace tandem::npu::fusion {

ClusterCost cluster_cost(const FusionGraph& g, size_t first, size_t last, const TargetModel& t, const ClusterOptions& o) {
  const CostModel cost(t);
  ClusterCost c;
  auto inside = [&](int i) { return i >= int(first) && i <= int(last); };
  // Last consumer of every op's result inside the cluster, and whether anything outside needs it.
  std::vector<int> last_use(g.ops.size(), -1);
  std::vector<bool> escapes(g.ops.size(), false);
  for (size_t i = 0; i < g.ops.size(); ++i)
    for (int p : g.ops[i].inputs) {
      if (inside(int(i))) last_use[size_t(p)] = std::max(last_use[size_t(p)], int(i));
      else if (inside(p)) escapes[size_t(p)] = true;
    }
  double matrix = 0, vector = 0, dma = 0, body = 0, flops = 0, lane_ops = 0;
  uint64_t bytes = 0;
  std::set<std::string> read_keys;
  std::set<int> read_producers;
  uint64_t peak = 0;
  for (size_t i = first; i <= last; ++i) {
    const FusionOp& op = g.ops[i];
    // DDR bytes this op moves: its weights, what it reads from outside the cluster, its result if
    // anything outside needs it, and what does not fit TCM while it runs (out and back).
    uint64_t op_bytes = op.weight_bytes;
    if (op.ext_in_bytes > 0 && (op.ext_in_key.empty() || read_keys.insert(op.ext_in_key).second)) op_bytes += op.ext_in_bytes;
    for (int p : op.inputs)
      if (!inside(p) && read_producers.insert(p).second) op_bytes += g.ops[size_t(p)].out_bytes;
    if (op.output || escapes[i]) op_bytes += op.out_bytes;
    // Held in TCM while op i runs: the cluster's intermediates still to be read (its inputs
    // among them, and its own result when a later op of the cluster reads it; results that only
    // leave the cluster stream out), and the op's working buffers, which the tiling search
    // shrinks to fit: counted at half of what the library's blocking asks, at most half the TCM.
    uint64_t kept = last_use[i] > int(i) ? op.out_bytes : 0;
    for (size_t p = first; p < i; ++p)
      if (last_use[p] >= int(i)) kept += g.ops[p].out_bytes;
    const uint64_t working = std::min(op.resident_bytes / 2, o.tcm_bytes / 2);
    peak = std::max(peak, kept + working);
    if (kept + working > o.tcm_bytes) {
      if (!o.allow_spill) c.feasible = false;
      op_bytes += 2 * (kept + working - o.tcm_bytes);  // out to DDR and back
    }
    const double op_dma = double(op_bytes) / t.dma_bytes_per_cycle() + 2 * t.dma.setup_cycles;
    // Inside one op, DMA, the arrays and the vector unit overlap (double-buffered slabs); from one
    // op to the next the cluster follows the data dependence, so op times add up.
    body += o.double_buffer ? std::max({op.matrix_cycles, op.vector_cycles, op_dma})
                            : op.matrix_cycles + op.vector_cycles + op_dma;
    matrix += op.matrix_cycles;
    vector += op.vector_cycles;
    dma += op_dma;
    flops += op.flops;
    lane_ops += op.vector_lane_ops;
    bytes += op_bytes;
  }
  c.tcm_peak = peak;
  c.external_bytes = bytes;
  const size_t n = last - first + 1;
  // Not hidden by overlap: launching the graph (issue + completion back to the host), the first
  // transfer before any compute can start, and one event hand-off between consecutive ops.
  const double first_transfer = cost.dma_cycles(1, std::min<uint64_t>(bytes, 256 * 1024));
  const double overhead = 2 * cost.signal_latency_cycles() + first_transfer + double(n - 1) * cost.signal_latency_cycles();
  c.matrix_s = t.seconds(matrix);
  c.vector_s = t.seconds(vector);
  c.dma_s = t.seconds(dma);
  c.overhead_s = t.seconds(overhead);
  c.seconds = t.seconds(body + overhead);
  c.energy_j = cost.energy_joules(flops, lane_ops, double(bytes), c.seconds);
  c.power_w = c.energy_j / c.seconds;
  return c;
}

}  // namespace tandem::npu::fusion
