// The NPU compiler as a library: llm-dialect text in, npu device Programs out. No MLIR type
// appears here, so the runtime, the CLI and the tests use the compiler without MLIR headers (and
// with their own exception/RTTI settings).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/arch.h"
#include "npu/oplib/elementwise.h"
#include "npu/oplib/kv_cache.h"
#include "npu/oplib/matmul.h"
#include "npu/oplib/norm_linear.h"
#include "npu/program.h"

namespace tandem::compiler {

struct CompileOptions {
  std::string target_path;  // NPU TargetModel JSON ("" = data/npu/hexagon-v75.json)
  int64_t tcm_budget = 0;   // bytes the schedules may use (0 = the target's TCM)
  std::string layout = "auto";  // weight layout: auto, interleaved_unpack, f16_tiles
  std::string kv_layout = "auto";  // KV cache layout: auto (per phase on the cost model), token_major, head_major
  double power_cap_w = 0;       // a power level: average NPU power no schedule may exceed (0 = none)
  // Fuse an rmsnorm with the linears of its fusion cluster that read it into one program
  // (kNormLinear). Off by default: a matmul the runtime splits between GPU and NPU needs its own
  // program (the runtime launches a fused one only where the NPU runs the whole cluster);
  // tandem-opt's pipeline fuses by default.
  bool fuse = false;
  bool keep_ir = false;         // print the final module into CompiledModule::ir (large for big buckets)
};

// A KV append program: buffer 0 the new rows [rows][width] fp16, buffer 1 the cache, bound at
// the appended position's window (npu/oplib/kv_cache.h kv_offset).
struct CompiledKvAppend {
  tandem::npu::oplib::KvGeometry geometry;
  uint32_t rows = 0;   // tokens appended per launch
  std::string phase;   // "prefill" / "decode": the phase the layout was chosen for
};

// An elementwise program on the vector unit: buffers a [rows][cols], b (rmsnorm: the gain
// [cols]; else [rows][cols]), y [rows][cols], all fp16 (npu/oplib/elementwise.h).
struct CompiledElementwise {
  tandem::npu::oplib::EltOp op = tandem::npu::oplib::EltOp::kAdd;
  uint32_t rows = 0, cols = 0;
  float eps = 1e-5f;
};

// One npu.program of the compiled module: what the runtime binds and launches.
struct CompiledProgram {
  enum class Kind { kMatmul, kKvAppend, kElementwise, kNormLinear };
  Kind kind = Kind::kMatmul;
  tandem::npu::Program program;
  tandem::npu::oplib::MatmulSpec spec;  // kMatmul: x [rows, in] f16, weight pack of spec.wtype, y [rows, out]
  std::string source_quant;             // kMatmul, kNormLinear: the weight's storage format before packing ("q4_0", ...)
  tandem::npu::oplib::NormLinearSpec norm_linear;  // kNormLinear: x [rows, in], gain [in], packs, one y per projection
  CompiledKvAppend kv;                  // kKvAppend
  CompiledElementwise elementwise;      // kElementwise
  double est_cycles = 0;                // the cost model's price of the chosen schedule
};

// An op the NPU does not run.
struct FallbackOp {
  std::string op;      // "llm.rmsnorm"
  std::string device;  // "cpu" / "gpu"
  std::string reason;
  double switch_cost_s = 0;
};

struct CompiledModule {
  std::vector<CompiledProgram> programs;  // in launch order
  std::vector<FallbackOp> fallbacks;
  std::string ir;                         // the final module (npu level), when keep_ir
};

// Parses `mlir` (llm dialect), runs the NPU pipeline (tandem-opt --tandem-npu-pipeline) and
// returns the programs. Errors carry the compiler's diagnostics with their source locations.
Result<CompiledModule> compile_mlir(std::string_view mlir, const CompileOptions& options);

// One matmul alone, x [rows, in] times a weight [out, in] stored as `quant`: what a weight-split
// slice of a layer's matmul runs (the NPU's share of the weight rows, `tandem compile --plan`).
Result<CompiledModule> compile_linear(uint32_t rows, uint32_t in, uint32_t out, std::string_view quant,
                                      const CompileOptions& options);

// One decoder layer of a model with this config, built from the runtime's op list
// (compiler/api/layer_ir.h) at `rows` tokens of `phase`, weights stored as `quant`, compiled
// as compile_mlir does.
Result<CompiledModule> compile_layer(const ModelConfig& c, int rows, std::string_view phase, std::string_view quant,
                                     const CompileOptions& options);

}  // namespace tandem::compiler
