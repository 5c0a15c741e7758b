#include "npu/fusion/fusion_graph.h"

#include <algorithm>
#include <cmath>

#include "npu/cost_model.h"

namespace tandem::npu::fusion {

namespace {
uint64_t ceil_to(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }
constexpr uint64_t kWeightSlabBytes = 256 * 1024;  // the operator library's slab size (oplib/matmul.cpp)
}  // namespace

FusionOp linear_op(const TargetModel& t, std::string name, uint64_t rows, uint64_t in, uint64_t out, DType weights) {
  const CostModel cost(t);
  const uint64_t T = uint64_t(t.matrix.tile_dim);
  const uint64_t NT = ceil_to(rows, T) / T, KT = ceil_to(in, T) / T, OT = ceil_to(out, T) / T;
  FusionOp op;
  op.name = std::move(name);
  op.kind = "linear";
  const double tiles = double(NT) * KT * OT;
  // Activation-stationary: one held-operand swap per (activation tile, in-tile), reused over the
  // out-tiles; the work spreads over all arrays.
  op.matrix_cycles = (tiles * cost.tile_stream_cycles() + double(NT) * KT * cost.stationary_swap_cycles()) /
                         double(t.matrix.arrays) + tiles * cost.issue_cycles(Opcode::kMma);
  op.flops = tiles * t.tile_flops();
  if (weights == DType::Q8_0 || weights == DType::Q4_0) {
    const VecOp unpack = weights == DType::Q8_0 ? VecOp::kUnpackQ8 : VecOp::kUnpackQ4;
    const uint64_t n = OT * KT * T * T;
    op.vector_cycles = cost.vector_cycles(unpack, n);
    op.vector_lane_ops = cost.vector_lane_ops(unpack, n);
  }
  op.weight_bytes = row_bytes(weights, size_t(in)) * out;
  op.resident_bytes = 2 * kWeightSlabBytes;  // double-buffered weight slabs (+ their unpack target)
  if (weights != DType::F16) op.resident_bytes += 2 * kWeightSlabBytes * 32 / 9;  // q4_0 slab unpacked to f16
  op.out_bytes = rows * out * 2;
  return op;
}

FusionOp vector_op(const TargetModel& t, std::string name, uint64_t elements, const std::vector<VecOp>& vec_ops) {
  const CostModel cost(t);
  FusionOp op;
  op.name = std::move(name);
  op.kind = "vector";
  for (VecOp v : vec_ops) {
    op.vector_cycles += cost.vector_cycles(v, elements);
    op.vector_lane_ops += cost.vector_lane_ops(v, elements);
  }
  op.out_bytes = elements * 2;
  return op;
}

FusionOp attention_op(const TargetModel& t, std::string name, uint64_t rows, uint64_t context, uint64_t heads,
                      uint64_t kv_heads, uint64_t head_dim) {
  const CostModel cost(t);
  const uint64_t T = uint64_t(t.matrix.tile_dim);
  // Causal: on average each query sees half of the new rows plus the earlier context.
  const uint64_t seen = context - rows + (rows + 1) / 2;
  const double tiles_per_head = 2.0 * double(ceil_to(rows, T) / T) * double(ceil_to(seen, T) / T) *
                                double(ceil_to(head_dim, T) / T);  // QK^T and PV
  FusionOp op;
  op.name = std::move(name);
  op.kind = "attention";
  op.matrix_cycles = heads * tiles_per_head * cost.tile_stream_cycles() / double(t.matrix.arrays);
  op.flops = heads * tiles_per_head * t.tile_flops();
  const uint64_t scores = heads * rows * seen;
  // exp (a silu-class op), scale, row sums and the normalizing multiply.
  for (VecOp v : {VecOp::kSilu, VecOp::kScale, VecOp::kAdd, VecOp::kMul}) {
    op.vector_cycles += cost.vector_cycles(v, scores);
    op.vector_lane_ops += cost.vector_lane_ops(v, scores);
  }
  op.ext_in_bytes = 2 * context * kv_heads * head_dim * 2;  // K and V of the cache, f16
  op.ext_in_key = "kv_cache";
  op.resident_bytes = 2 * 2 * T * kv_heads * head_dim * 2;    // double-buffered K/V tiles
  op.out_bytes = rows * heads * head_dim * 2;
  return op;
}

FusionGraph decoder_layer_graph(const TargetModel& t, const ModelConfig& c, uint64_t rows, uint64_t context,
                                DType w) {
  FusionGraph g;
  const uint64_t D = uint64_t(c.dim), KV = uint64_t(c.kv_dim()), F = uint64_t(c.ffn_dim);
  auto add = [&](FusionOp op, std::vector<int> inputs) {
    op.inputs = std::move(inputs);
    g.ops.push_back(std::move(op));
    return int(g.ops.size()) - 1;
  };
  // The layer input comes from DDR (the previous layer) into the first norm and the residual.
  FusionOp norm1 = vector_op(t, "attn_norm", rows * D, {VecOp::kSumSq, VecOp::kRmsApply});
  norm1.ext_in_bytes = rows * D * 2;
  norm1.ext_in_key = "layer_input";
  const int n1 = add(norm1, {});
  const int q = add(linear_op(t, "q", rows, D, D, w), {n1});
  const int k = add(linear_op(t, "k", rows, D, KV, w), {n1});
  const int v = add(linear_op(t, "v", rows, D, KV, w), {n1});
  const int rq = add(vector_op(t, "rope_q", rows * D, {VecOp::kMul, VecOp::kMul, VecOp::kAdd}), {q});
  FusionOp rk = vector_op(t, "rope_k", rows * KV, {VecOp::kMul, VecOp::kMul, VecOp::kAdd});
  rk.output = true;  // K goes to the KV cache
  const int rkk = add(rk, {k});
  g.ops[size_t(v)].output = true;  // V goes to the KV cache
  const int at = add(attention_op(t, "attention", rows, context, uint64_t(c.n_heads), uint64_t(c.n_kv_heads),
                                  uint64_t(c.head_dim)),
                     {rq, rkk, v});
  const int o = add(linear_op(t, "o", rows, D, D, w), {at});
  FusionOp res1 = vector_op(t, "residual_1", rows * D, {VecOp::kAdd});
  res1.ext_in_bytes = rows * D * 2;  // the layer input again: free when attn_norm is in the same cluster
  res1.ext_in_key = "layer_input";
  const int r1 = add(res1, {o});
  const int n2 = add(vector_op(t, "ffn_norm", rows * D, {VecOp::kSumSq, VecOp::kRmsApply}), {r1});
  const int gt = add(linear_op(t, "gate", rows, D, F, w), {n2});
  const int up = add(linear_op(t, "up", rows, D, F, w), {n2});
  const int sw = add(vector_op(t, "swiglu", rows * F, {VecOp::kSwiglu}), {gt, up});
  const int dn = add(linear_op(t, "down", rows, F, D, w), {sw});
  FusionOp res2 = vector_op(t, "residual_2", rows * D, {VecOp::kAdd});
  res2.output = true;
  add(res2, {dn, r1});
  g.describe = c.arch_name + " layer (dim " + std::to_string(D) + ", ffn " + std::to_string(F) + "), " +
               std::to_string(rows) + " rows over " + std::to_string(context) + " tokens, " + std::string(dtype_name(w));
  return g;
}

}  // namespace tandem::npu::fusion
