//===- Passes.td - the NPU compiler's passes -----------------------------------===//
#ifndef TANDEM_PASSES_TD
#define TANDEM_PASSES_TD

include "mlir/Pass/PassBase.td"

// Every pass that consults the NPU reads the same TargetModel JSON (data/npu/*.json); the
// `target` option names it (empty: data/npu/hexagon-v75.json).
defvar TargetOption = Option<"targetPath", "target", "std::string", /*default=*/"\"\"",
                             "NPU TargetModel JSON (empty: the default data/npu/hexagon-v75.json)">;
defvar BudgetOption = Option<"tcmBudget", "tcm-budget", "int64_t", /*default=*/"0",
                             "TCM bytes the schedule may use (0: the target's whole TCM)">;

def LlmExpandMlp : Pass<"llm-expand-mlp", "mlir::ModuleOp"> {
  let summary = "Rewrite llm.mlp into its three linears and the SwiGLU between them";
  let description = [{
    The NPU lowers linears; an MLP kept whole would fall back entirely. After this rewrite the
    gate, up and down projections each become NPU programs and only the SwiGLU is left to place.
  }];
}

def LlmSpecializePhase : Pass<"llm-specialize-phase", "mlir::ModuleOp"> {
  let summary = "Set each llm op's phase and pick each linear's dataflow for that phase";
  let description = [{
    Phase from the activation's rows (1: decode, else prefill) unless the function carries
    `llm.phase`; an explicit phase that contradicts the shape is an error. Each llm.linear gets
    the dataflow the shared cost model (npu/oplib estimate_matmul_cycles on the target) prices
    lower for its shape: prefill GEMMs and decode GEMVs end up with different dataflows.
  }];
  let options = [TargetOption];
}

def LlmFusionClusters : Pass<"llm-fusion-clusters", "mlir::ModuleOp"> {
  let summary = "Partition each function's llm ops into fusion clusters under TCM and power budgets";
  let description = [{
    Builds the operator graph of every function (each op's work from the shared cost model:
    npu/fusion/fusion_graph.h), partitions it with the chosen strategy and annotates each op with
    its `cluster` index and the function with the partition's `fusion.*` totals (seconds, external
    bytes, peak power). `search` is dynamic programming over every contiguous partition whose
    clusters fit the TCM budget and the power cap; `naive` the greedy reference; `library`,
    `local` and `mega` the fixed strategies.
  }];
  let options = [TargetOption, BudgetOption,
    Option<"powerCap", "power-cap", "double", /*default=*/"0", "a cluster's average power limit in W (0: none)">,
    Option<"partitioner", "partitioner", "std::string", /*default=*/"\"search\"",
           "search, naive, library, local or mega">];
}

def LlmMarkFallback : Pass<"llm-mark-fallback", "mlir::ModuleOp"> {
  let summary = "Mark llm ops the NPU cannot run for CPU/GPU fallback, with the switch cost";
  let description = [{
    The NPU lowers llm.linear; every other llm op (and a linear whose shape the target cannot
    hold) gets `fallback = "cpu"` (sampling) or `"gpu"` (the rest), and `switch_cost_s`: the time
    to hand its activation across and back through DDR at the target's DDR bandwidth plus one
    graph launch on the NPU side, which a placement must pay for leaving the NPU.
  }];
  let options = [TargetOption];
}

def LlmToState : Pass<"llm-to-state", "mlir::ModuleOp"> {
  let summary = "Lower llm.linear and llm.kv_append to state: weight packs and KV pages in target-chosen layouts";
  let description = [{
    The weight layout of a quantized linear is chosen on the cost model: "interleaved_unpack"
    (blocks with their scales, unpacked on the vector unit into matrix tiles) or "f16_tiles"
    (dequantized at pack time: no vector work, about 3.5x (q4_0) more DMA bytes).
    A KV append becomes state.kv_pages (the cache's layout and page size) and state.kv_write.
    The KV layout is chosen per phase on the cost model's DMA cycles of that phase's cache
    traffic: the append, and attention reading the context one (page, head) block at a time
    (prefill: the prompt it appends; decode: the whole cache).
    Prefill's many-token appends favour "token_major", decode's per-head reads "head_major".
    Heads come from the llm.attention that reads the cache (one head of the full width if none).
  }];
  let options = [TargetOption,
    Option<"layout", "layout", "std::string", /*default=*/"\"auto\"",
           "weight layout: auto, interleaved_unpack or f16_tiles">,
    Option<"kvLayout", "kv-layout", "std::string", /*default=*/"\"auto\"",
           "KV cache layout: auto, token_major or head_major">];
  let dependentDialects = ["::tandem::ir::state::StateDialect"];
}

def StateToTdma : Pass<"state-to-tdma", "mlir::ModuleOp"> {
  let summary = "Tile state.matmul into TCM buffers and a (double-buffered) tdma.matmul_tiles loop";
  let description = [{
    Searches the blocking (rows of X resident, out x in tiles per weight slab) and the buffering
    (weights and output each single or double) that the shared cost model prices lowest among
    those fitting the TCM budget. When the budget is short, the search settles on asymmetric
    buffering (e.g. double weight slabs, one output panel) before shrinking tiles.

    Fusion (fuse=true): an NPU rmsnorm whose every user is a state.matmul of the same fusion
    cluster, format and dataflow becomes one tdma.norm_linear with them (X loaded and normalized
    once in TCM, each projection streamed past it), tiled for the widest projection within the
    budget left after the norm's gain row and scalar slot. fuse=false keeps one kernel per op
    (what the runtime, which runs op by op, binds).
  }];
  let options = [TargetOption, BudgetOption,
    Option<"buffering", "buffering", "std::string", /*default=*/"\"auto\"",
           "auto (searched), double or single">,
    Option<"powerCap", "power-cap", "double", /*default=*/"0",
           "average NPU power (W) no schedule may exceed; 0 = uncapped (a power level)">,
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "emit a norm and the linears of its cluster that read it as one tdma.norm_linear">];
  let dependentDialects = ["::tandem::ir::tdma::TdmaDialect"];
}

def TdmaAllocateTcm : Pass<"tdma-allocate-tcm", "mlir::ModuleOp"> {
  let summary = "Place every tdma.alloc in TCM (first fit over live ranges); diagnose overflow";
  let options = [TargetOption, BudgetOption];
}

def TdmaToNpu : Pass<"tdma-to-npu", "mlir::ModuleOp"> {
  let summary = "Expand tdma.matmul_tiles / norm_linear / vector_rows and DMA kernels into npu.programs and launch them";
  let description = [{
    Emits the instruction stream of each tiled loop (npu/oplib emit_matmul: the same emitter the
    runtime's operator library uses) at the TCM addresses the allocator chose, as an
    npu.program with `tandem.matmul` describing its operands; the loop becomes npu.launch. A
    tdma.norm_linear becomes one program (npu/oplib emit_norm_linear, `tandem.norm_linear`) and
    one launch with a result per projection.
  }];
  let options = [TargetOption];
  let dependentDialects = ["::tandem::ir::npu::NpuDialect"];
}

def NpuExport : Pass<"npu-export", "mlir::ModuleOp"> {
  let summary = "Verify every npu.program against the target and write it in the Program text format";
  let options = [TargetOption,
    Option<"dir", "dir", "std::string", /*default=*/"\"\"", "write <dir>/<program>.tnpu (empty: verify only)">];
}

#endif  // TANDEM_PASSES_TD
