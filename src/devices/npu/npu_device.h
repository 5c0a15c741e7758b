// The npu device behind the device contract: the NPU model of src/npu (functional fp16 executor
// + timing from the target's cost model). Like a real NPU it runs only graphs prepared ahead of
// time for a static shape and refuses anything else; prepare() is charged the target's
// graph-build cost and cached.
//
// With a compile cache (set_compile_cache), a matmul whose shape and weight format the cache
// holds runs the compiler's program instead of the library's, after its SHA-256 is checked; a
// program whose bytes changed fails prepare() (it is never run).
//
// Graphs come from the operator library: matmul (f16/q8_0/q4_0 weights, W4A16) and the vector
// unit's rmsnorm, swiglu and add. Rope, attention and embedding lookups have no NPU graph
// (HeteroInfer keeps them on the GPU); prepare() refuses them with a reason. A fused rmsnorm +
// projections (norm_linear) runs only the compiler's program from the cache (tandem compile
// --fuse-clusters): X read once, normalized in TCM, every projection from it. So does a KV store
// into a KV the npu owns (fp16 pages in the compiled layout, OpCall::kv_pages): the compiler's
// kv_append program, run once for the keys and once for the values.
#pragma once

#include <map>
#include <variant>

#include "compile_cache/cache.h"
#include "core/half.h"
#include "devices/device.h"
#include "npu/executor.h"
#include "npu/oplib/elementwise.h"
#include "npu/oplib/matmul.h"
#include "npu/oplib/norm_linear.h"
#include "npu/target_model.h"

namespace tandem::devices {

class NpuDevice final : public Device, public StaticGraphs, public CompiledPrograms, public MemoryTraffic {
 public:
  explicit NpuDevice(npu::TargetModel target) : target_(std::move(target)) {}
  std::string name() const override { return "npu"; }
  DeviceCaps caps() const override;
  bool supports(const OpCall& call) const override;  // ops of a prepared shape and type
  Result<std::unique_ptr<Completion>> submit(const OpCall& call) override;
  StaticGraphs* static_graphs() override { return this; }
  CompiledPrograms* compiled_programs() override { return this; }
  const MemoryTraffic* memory_traffic() const override { return this; }

  // StaticGraphs
  Result<PrepareReport> prepare(const GraphSpec& spec) override;
  double prepare_seconds_total() const override { return prepare_total_; }
  uint64_t graphs_prepared() const override { return graphs_.size(); }
  // CompiledPrograms: compiled programs for the shapes the cache holds (see the top of this file).
  void set_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) { cache_ = std::move(cache); }
  Status use_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) override {
    set_compile_cache(std::move(cache));
    return Status::Ok();
  }
  uint64_t graphs_from_cache() const override { return from_cache_; }
  uint64_t graphs_not_cached() const override { return not_cached_; }
  std::string first_not_cached() const override { return first_not_cached_; }
  // MemoryTraffic: the pool's fp32 through fp16 staging; nothing is copied besides.
  uint64_t bytes_copied() const override { return 0; }
  uint64_t bytes_converted() const override { return converted_; }
  const npu::TargetModel& target() const { return target_; }

  // Weights the NPU can hold: every type. Its own formats (f16, q8_0, q4_0) are packed as they
  // are; any other (f32, bf16, the K-quants, Q4_1/Q5_x, IQ4) is dequantized by ggml's arithmetic
  // and rounded to f16 when it prepares a graph. The packed copy is what it keeps: half the f32
  // bytes, but 3.6x a 4.5-bit K-quant's in the NPU's memory and its weight DMA -- the price of
  // formats its vector units cannot unpack. The conversion is charged to the host once per graph.
  static bool weight_type_supported(DType t);
  // The format the NPU packs a weight type into.
  static DType packed_format(DType t);
  // Whether the operator library has a graph for this kind of op at all.
  static bool op_kind_supported(OpKind k);
  // The cache's program for a graph of this spec -- a matmul by its shape and packed weight format,
  // a row op by its op, shape and eps, a fused norm + projections by theirs -- or nullptr. What
  // prepare() binds, and what the simulator times (sim/task_cost.h).
  static const compile_cache::ProgramEntry* cached_program(const compile_cache::CompileCache& cache, const GraphSpec& s);

 private:
  struct ElementwiseGraph {
    npu::oplib::EltOp op;
    npu::Program program;
    std::vector<fp16_t> gain;  // rmsnorm: the gain weight, converted once at prepare time
  };
  struct NormLinearGraph {
    npu::Program program;
    std::vector<std::vector<uint8_t>> packs;  // each projection's weights, packed as the program reads them
    std::vector<fp16_t> gain;
  };
  struct KvAppendGraph {  // the compiler's append of `rows` tokens into fp16 pages (core/kv_layout.h)
    npu::Program program;
    uint32_t rows = 0;
  };
  using Graph = std::variant<npu::oplib::PreparedMatmul, ElementwiseGraph, NormLinearGraph, KvAppendGraph>;
  Result<Graph> build_kv_append(const GraphSpec& spec, double* cost, bool* cached) const;
  Result<double> run_kv_append(const KvAppendGraph& g, const OpCall& c);
  Result<Graph> build_norm_linear(const GraphSpec& spec, double* cost, bool* cached) const;
  Result<double> run_norm_linear(const NormLinearGraph& g, const OpCall& c);
  Result<Graph> build(const GraphSpec& spec, double* cost, bool* cached) const;
  Result<double> run_matmul(const npu::oplib::PreparedMatmul& g, const OpCall& c);
  Result<double> run_elementwise(const ElementwiseGraph& g, const OpCall& c);
  npu::Executor& executor();  // one per device: its TCM (MiBs) is allocated once, not per kernel

  npu::TargetModel target_;
  std::map<std::string, Graph> graphs_;
  std::unique_ptr<npu::Executor> exec_;
  std::vector<fp16_t> in0_, in1_, out16_;  // fp16 staging, reused
  std::vector<std::vector<fp16_t>> proj16_;  // norm_linear: one output staging per projection
  uint64_t converted_ = 0;                 // fp32 bytes through the staging, both ways (one worker calls submit)
  double prepare_total_ = 0;
  std::shared_ptr<const compile_cache::CompileCache> cache_;
  size_t from_cache_ = 0;
  size_t not_cached_ = 0;          // built at run time although a cache was given
  std::string first_not_cached_;   // the first of those and why
  std::string why_not_cached(const GraphSpec& spec) const;
  // A schedule's MatmulSpec from its manifest entry (format, order, buffering, arrays).
  Result<npu::oplib::MatmulSpec> schedule_of(const compile_cache::ProgramEntry& e) const;
  Result<npu::oplib::PreparedMatmul> load_compiled(const compile_cache::ProgramEntry& e, const uint8_t* rows, size_t bytes,
                                                DType source) const;
};

}  // namespace tandem::devices
