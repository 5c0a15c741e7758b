#include "npu/fusion/fusion_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "core/memory_pool.h"
#include "graph/transformer_graph.h"
#include "model/model.h"
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

namespace {

// The fusion graph's name for an op of the decoder's list: the projection a weight serves, or the
// step a row op is. Names are what the reports and the compiler's clusters print.
std::string op_name(const graph::OpCall& op, const LayerWeights& L, const graph::Buffers& buf, int* residuals, int* norms) {
  using graph::OpKind;
  const std::pair<const Weight*, const char*> projections[] = {
      {&L.wq, "q"}, {&L.wk, "k"}, {&L.wv, "v"}, {&L.wo, "o"}, {&L.w_gate, "gate"}, {&L.w_up, "up"}, {&L.w_down, "down"},
      {&L.bq, "bias_q"}, {&L.bk, "bias_k"}, {&L.bv, "bias_v"}, {&L.q_norm, "q_norm"}, {&L.k_norm, "k_norm"},
      {&L.attn_post_norm, "attn_post_norm"}, {&L.ffn_post_norm, "ffn_post_norm"}};
  for (const auto& [w, name] : projections)
    if (op.weight == w) return name;
  switch (op.kind) {
    case OpKind::kRmsNorm: return (*norms)++ == 0 ? "attn_norm" : "ffn_norm";
    case OpKind::kRope: return op.out.data == buf.q ? "rope_q" : "rope_k";
    case OpKind::kAdd: return "residual_" + std::to_string(++*residuals);
    default: return graph::op_kind_name(op.kind);
  }
}

}  // namespace

FusionGraph decoder_layer_graph(const TargetModel& t, const ModelConfig& config, uint64_t rows, uint64_t context,
                                DType w) {
  // The layer is the runtime's: graph::build_forward's ops of a one-layer model of this shape
  // (laid out in address space only), each priced as the NPU would run it. Which op reads which
  // is followed through the buffers the ops name.
  ModelConfig c = config;
  c.n_layers = 1;
  const std::shared_ptr<Model> model = Model::shape_only(c, w);
  MemoryPool pool;
  graph::BufferPlan plan(pool, c, int(rows), int(context));
  pool.allocate_address_space_only();
  const graph::Buffers buf = plan.bind(pool);
  const std::vector<graph::OpCall> ops = graph::build_forward(*model, buf, int(rows), 0, nullptr, false);
  const LayerWeights& L = model->layers()[0];

  FusionGraph g;
  std::map<const void*, int> producer;  // buffer -> the op whose result it holds now (absent: the layer input)
  auto reads = [&](const void* p, FusionOp& op) {
    if (auto it = producer.find(p); it != producer.end()) {
      if (std::find(op.inputs.begin(), op.inputs.end(), it->second) == op.inputs.end()) op.inputs.push_back(it->second);
    } else if (p == buf.x) {  // the layer input comes from DDR (the previous layer)
      op.ext_in_bytes = rows * uint64_t(c.dim) * 2;
      op.ext_in_key = "layer_input";
    }
  };
  int residuals = 0, norms = 0;
  for (const graph::OpCall& call : ops) {
    using graph::OpKind;
    const uint64_t n = uint64_t(call.out.rows), width = uint64_t(call.out.cols);
    FusionOp op;
    switch (call.kind) {
      case OpKind::kGetRows: continue;  // the embedding precedes the layer
      case OpKind::kNormLinear: continue;  // already fused: the runtime's launch of a cluster, never in an op list
      case OpKind::kKvStore:
        // K and V leave for the cache; attention reads them back through it.
        for (const float* src : {call.a.data, call.b.data}) g.ops[size_t(producer.at(src))].output = true;
        producer[call.k_cache] = producer.at(call.a.data);
        producer[call.v_cache] = producer.at(call.b.data);
        continue;
      case OpKind::kMatmul:
        op = linear_op(t, "", n, uint64_t(call.weight->cols), uint64_t(call.weight->rows), w);
        reads(call.a.data, op);
        break;
      case OpKind::kAttention:
        op = attention_op(t, "", n, context, uint64_t(call.n_heads), uint64_t(call.n_kv_heads), uint64_t(call.head_dim));
        for (const void* p : {static_cast<const void*>(call.a.data), static_cast<const void*>(call.k_cache),
                              static_cast<const void*>(call.v_cache)})
          reads(p, op);
        break;
      case OpKind::kRmsNorm:
        op = vector_op(t, "", n * width, {VecOp::kSumSq, VecOp::kRmsApply});
        reads(call.a.data, op);
        break;
      case OpKind::kRope:
        op = vector_op(t, "", n * width, {VecOp::kMul, VecOp::kMul, VecOp::kAdd});
        reads(call.out.data, op);
        break;
      case OpKind::kAddBias:
      case OpKind::kAdd:
        op = vector_op(t, "", n * width, {VecOp::kAdd});
        if (call.kind == OpKind::kAdd) reads(call.a.data, op);  // the branch, then the residual it joins
        reads(call.out.data, op);
        break;
      case OpKind::kSwiglu:
        op = vector_op(t, "", n * width, {VecOp::kSwiglu});
        reads(call.out.data, op);
        reads(call.a.data, op);
        break;
      case OpKind::kGeglu:
        // gelu_tanh(g) * u = g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)) * u: the cubic (two
        // multiplies, an add, a scale), then the sigmoid-and-multiply pass SwiGLU makes.
        op = vector_op(t, "", n * width, {VecOp::kMul, VecOp::kMul, VecOp::kAdd, VecOp::kScale, VecOp::kSwiglu});
        reads(call.out.data, op);
        reads(call.a.data, op);
        break;
      case OpKind::kSoftcap:  // c * tanh(x / c): two scales around a sigmoid pass
        op = vector_op(t, "", n * width, {VecOp::kScale, VecOp::kSilu, VecOp::kScale});
        reads(call.out.data, op);
        break;
    }
    op.name = op_name(call, L, buf, &residuals, &norms);
    g.ops.push_back(std::move(op));
    producer[call.out.data] = int(g.ops.size()) - 1;
  }
  g.ops.back().output = true;  // the layer's output
  g.describe = c.arch_name + " layer (dim " + std::to_string(c.dim) + ", ffn " + std::to_string(c.ffn_dim) + "), " +
               std::to_string(rows) + " rows over " + std::to_string(context) + " tokens, " + std::string(dtype_name(w));
  return g;
}

}  // namespace tandem::npu::fusion
