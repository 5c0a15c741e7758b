// Partition strategies: how one op of the transformer becomes tasks on the GPU and the NPU under
// each strategy of HeteroInfer (docs/SEEDS.md A.2), including the baselines it must beat.
//
// The NPU runs only static shapes: activation row counts from the standard lengths (plus 1, the
// decode graph). A part of a dynamic length is either cut to a standard length (activation-
// centric, multi-tensor), padded up to one (padding, npu-only, layer, weight-centric and the
// hybrid's remainder) — in place when its buffers hold the extra rows, else staged through a
// scratch buffer — or prepared for its exact length at run time (online-prepare, charged the
// NPU's graph-build cost). Every NPU kernel names the GPU as its fallback: if the NPU fails it
// at run time, the driver runs it again there.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/task_graph.h"

namespace tandem {

enum class Strategy {
  kGpuOnly, kNpuOnly, kLayer, kWeightCentric, kActivationCentric, kMultiTensor, kHybrid,
  kPadding, kOnlinePrepare, kNpuPipe,
};
const char* strategy_name(Strategy s);
Result<Strategy> strategy_from_name(const std::string& name);  // error lists the names
std::vector<std::string> strategy_names();

// A per-op choice (from a solver's plan): the strategy and GPU share for a splittable matmul
// with weight [out x in] at n activation rows, or nullopt to use the options' strategy.
struct OpChoice {
  Strategy strategy;
  double gpu_share;
  // multi-tensor: `npu_chunks` chunks of `npu_chunk` rows (a standard length) on the NPU back to
  // back, the rest on the GPU alongside. 0: the largest standard length <= n, as many as fit.
  int64_t npu_chunk = 0, npu_chunks = 0;
};
// Weight-centric and hybrid splits: how many of a weight's rows the NPU takes at this GPU share
// (a multiple of its 32-row tiles, so its sub-shape pads nothing). The compiler builds the same
// slice for a plan (tandem compile --plan), so what it compiles is what the runtime asks for.
int64_t npu_rows_of_split(int64_t weight_rows, double gpu_share);
// Whether a strategy splits a matmul's weight rows between the devices.
bool splits_weight_rows(Strategy s);

using Decider = std::function<std::optional<OpChoice>(int64_t out, int64_t in, int64_t n)>;

struct PartitionOptions {
  Strategy strategy = Strategy::kGpuOnly;
  Decider decider;  // if set, consulted for every splittable matmul first
  double gpu_share = 0.5;  // weight-centric and hybrid: fraction of weight rows on the GPU
  std::vector<int> standard_lengths = {32, 64, 128, 256, 512, 1024};
  // Devices by role (runtime/device_roles.h picks them from the device set by kind): `gpu` takes
  // the GPU's role (dynamic shapes: the GPU, or the cpu where there is none) and every op that is
  // not a split matmul; `npu` the NPU's (static graphs; "" when the set has none: every matmul
  // then runs on `gpu`). `fallbacks`, in order, take an op the role's device does not support.
  std::string gpu, npu;  // set from the device set (DeviceRoles::apply_to)
  std::vector<std::string> fallbacks;
  // The compiler's placement (a compile cache is given): a row op (rmsnorm, swiglu, add) runs on
  // the NPU when the matmul that next reads the pool runs whole on the NPU at this length, so a
  // chain of NPU matmuls is not broken by a GPU round trip for each norm, activation and residual
  // (EdgeLLM-MLIR; HeteroInfer's layer placement keeps them on the GPU, the default).
  bool npu_row_ops = false;
  // The npu owns the KV (fp16 pages in its compiled layout, HeteroForward's choice): its kv_stores
  // go to the npu as the compiler's appends. Otherwise a typed cache is the GPU's to write.
  bool npu_owns_kv = false;
};

// Whether a device can run a call (devices::Device::supports); null: every device runs every call.
using SupportsFn = std::function<bool(const std::string& device, const graph::OpCall& call)>;

// Where padded NPU runs stage their rows: [max_rows x max_cols] floats each.
struct PadScratch {
  float* x = nullptr;
  float* y = nullptr;
  int64_t max_rows = 0, max_cols = 0;
};

// Rows an activation slot holds so a chunk of max_batch rows can be padded in place: the smallest
// standard length >= max_batch, or max_batch when none is.
int slot_rows_for(int max_batch, const std::vector<int>& standard_lengths);

class Partitioner {
 public:
  // npu_can_run(spec) prepares (or finds) the NPU graph for spec; false makes that part fall
  // back to the GPU (an unsupported weight type, or an injected prepare failure).
  Partitioner(PartitionOptions options, PadScratch pad, std::function<bool(const graph::GraphSpec&)> npu_can_run,
              SupportsFn supports = {});

  // Appends the tasks of `op` (each depending on `after`) and returns the tasks that finish it.
  // splittable: a layer matmul the strategy may place on the NPU; everything else goes to the GPU.
  // A chunk's op list (graph::build_forward), op by op through lower() with each row op's next layer
  // matmul as its consumer; with npu_row_ops an rmsnorm and the layer matmuls right after it that
  // read its output (q, k, v; gate, up) run as one fused norm_linear on the NPU where it runs those
  // matmuls whole and has the program. Returns the tasks that finish the chunk.
  std::vector<int> lower_forward(const std::vector<graph::OpCall>& ops,
                                 const std::function<bool(const graph::OpCall&)>& layer_matmul, TaskGraph& g);
  // consumer: the next layer matmul in the op list after a row op (npu_row_ops follows it), or null.
  std::vector<int> lower(const graph::OpCall& op, bool splittable, const std::vector<int>& after, TaskGraph& g,
                         const std::string& label, const graph::OpCall* consumer = nullptr);

  const PartitionOptions& options() const { return opt_; }
  int fallbacks() const { return fallbacks_; }  // NPU parts that ran on the GPU instead
  uint64_t decided() const { return decided_; }  // splittable matmuls the decider chose for
  uint64_t npu_row_ops() const { return npu_row_ops_; }  // row ops placed on the NPU (npu_row_ops), whole ops
  uint64_t npu_fused() const { return npu_fused_; }       // fused norm + projections launched on the NPU
  uint64_t npu_kv_appends() const { return npu_kv_appends_; }  // KV stores into npu-owned pages run on the NPU
  // Ops (or parts) placed past their role's device because it does not support them, and the
  // first such placement in words; error() names an op no device of the set supports (the tasks
  // lowered for it are not to be run).
  uint64_t placed_elsewhere() const { return placed_elsewhere_; }
  const std::string& first_placement() const { return first_placement_; }
  const std::string& error() const { return error_; }

 private:
  bool is_standard(int64_t m) const;
  int64_t largest_standard_at_most(int64_t m) const;   // 0 if none
  int64_t smallest_standard_at_least(int64_t m) const;  // 0 if none
  std::vector<int> gpu_part(const graph::OpCall& op, int64_t r0, int64_t r1, int64_t w0, int64_t w1,
                            const std::vector<int>& after, TaskGraph& g, const std::string& label);
  // The NPU computes activation rows [r0, r1) x weight rows [w0, w1): in place when the row count
  // is a static shape (or exact_shape is set: online-prepare), else padded through the scratch
  // (pieces of at most the largest standard length, run one after another).
  std::vector<int> npu_part(const graph::OpCall& op, int64_t r0, int64_t r1, int64_t w0, int64_t w1,
                            const std::vector<int>& after, TaskGraph& g, const std::string& label, bool exact_shape);
  std::vector<int> npu_pipe(const graph::OpCall& op, const std::vector<int>& after, TaskGraph& g,
                            const std::string& label);
  int64_t gpu_rows_of(const graph::OpCall& op, double gpu_share) const;  // weight-centric split point
  std::vector<int> lower_split(const graph::OpCall& op, const OpChoice& choice, const std::vector<int>& after,
                               TaskGraph& g, const std::string& label);
  // The choice for a splittable matmul: the decider's where it has one, else the options'.
  OpChoice choice_for(const graph::OpCall& matmul, bool count);
  // Whether that choice runs the matmul whole on the NPU at its length (no GPU part).
  bool npu_runs_whole(const graph::OpCall& matmul);
  // An op of independent rows on the NPU at static shapes (pieces, padded in place up to a standard
  // length where its buffers have the rows; `fallback` reruns a failed piece): the tasks that finish
  // it, or nothing when it cannot go there.
  std::optional<std::vector<int>> npu_pieces(const graph::OpCall& op, const std::string& fallback, const std::vector<int>& after,
                                             TaskGraph& g, const std::string& label);
  // An rmsnorm and the projections reading it as one norm_linear on the NPU, or nothing.
  std::optional<std::vector<int>> npu_fused_norm(const graph::OpCall& norm, const std::vector<const graph::OpCall*>& projections,
                                                 const std::vector<int>& after, TaskGraph& g, const std::string& label);
  // A KV store into the pages an npu owns (graph::OpCall::kv_pages) as the compiler's appends
  // (npu_pieces), or nothing when no program fits: the GPU's role writes the same pages then.
  std::optional<std::vector<int>> npu_kv_store(const graph::OpCall& op, const std::vector<int>& after, TaskGraph& g,
                                               const std::string& label);
  // A row op on the NPU (npu_pieces), or nothing when it cannot go there.
  std::optional<std::vector<int>> npu_row_op(const graph::OpCall& op, const std::vector<int>& after, TaskGraph& g,
                                const std::string& label);

  // The device that runs `call` in the GPU's role: `gpu`, else the first fallback supporting it.
  std::string dynamic_device(const graph::OpCall& call, const std::string& label);

  PartitionOptions opt_;
  PadScratch pad_;
  std::function<bool(const graph::GraphSpec&)> npu_can_run_;
  SupportsFn supports_;
  int fallbacks_ = 0;
  uint64_t decided_ = 0;
  uint64_t npu_row_ops_ = 0;
  uint64_t npu_fused_ = 0;
  uint64_t npu_kv_appends_ = 0;
  uint64_t placed_elsewhere_ = 0;
  std::string first_placement_, error_;
};

}  // namespace tandem
