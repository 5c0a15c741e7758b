// The operator graph the fusion-cluster search partitions: each op's work priced on the shared
// NPU cost model (npu/cost_model.h), and the tensors between ops. The graph is a sequence in
// topological order; a cluster is a contiguous run of it executed as one NPU graph, whose
// intermediates stay in TCM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/arch.h"
#include "npu/target_model.h"

namespace tandem::npu::fusion {

struct FusionOp {
  std::string name;          // "q", "rmsnorm", ...
  std::string kind;          // "linear", "vector", "attention"
  double matrix_cycles = 0;  // on the arrays (all of them), held-operand swaps included
  double vector_cycles = 0;  // on the vector unit
  double flops = 0;          // matrix FLOPs of the padded tiles (energy)
  double vector_lane_ops = 0;  // (energy)
  uint64_t weight_bytes = 0;   // streamed from DDR every time the op runs (never reused across ops)
  uint64_t resident_bytes = 0; // TCM the op needs besides its operands (weight slab double buffer, KV tiles)
  uint64_t out_bytes = 0;      // its result tensor
  uint64_t ext_in_bytes = 0;   // inputs from outside the graph (layer input, KV cache reads)
  std::string ext_in_key;      // ops of one cluster reading the same outside tensor read it once
  std::vector<int> inputs;     // producer op indices (earlier in the sequence)
  bool output = false;         // its result leaves the graph (the layer's output, KV writes)
};

struct FusionGraph {
  std::vector<FusionOp> ops;
  std::string describe;  // "llama3.2-1b layer, prefill 512 rows, q4_0"
};

// Op constructors, shared by the layer builder below and the compiler's fusion pass (which builds
// the graph from llm ops): one place derives an op's work from its shape.
FusionOp linear_op(const TargetModel& t, std::string name, uint64_t rows, uint64_t in, uint64_t out, DType weights);
// Elementwise work of `vec_ops` vector instructions over `elements` elements each (rmsnorm:
// sumsq + rmsapply; rope: three multiply/adds; ...), reading `inputs` tensors of that size.
FusionOp vector_op(const TargetModel& t, std::string name, uint64_t elements, const std::vector<VecOp>& vec_ops);
// Causal attention of `rows` new queries over `context` cached tokens: QK^T and PV on the arrays,
// the softmax's exponentials on the vector unit; the KV cache is read from DDR.
FusionOp attention_op(const TargetModel& t, std::string name, uint64_t rows, uint64_t context, uint64_t heads,
                      uint64_t kv_heads, uint64_t head_dim);

// One decoder layer of `c` for `rows` tokens attending over `context` tokens, weights in `weights`.
FusionGraph decoder_layer_graph(const TargetModel& t, const ModelConfig& c, uint64_t rows, uint64_t context,
                                DType weights);

}  // namespace tandem::npu::fusion
