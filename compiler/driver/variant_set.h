// `tandem compile`'s work: the variant set (phase x bucket x power level x precision) of one
// model's decoder layer, compiled, validated against the reference on the functional executor,
// and written into a compile cache with its manifest.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "compile_cache/manifest.h"
#include "core/status.h"
#include "model/arch.h"
#include "npu/target_model.h"

namespace tandem::compiler {

struct PowerLevel {
  std::string name;  // "max", "1.5W"
  double cap_w = 0;  // 0 = uncapped
};
// "max,1.5W,0.8" -> levels (a bare number is watts). Errors name the bad item.
Result<std::vector<PowerLevel>> parse_power_levels(const std::string& list);

// A weight-split slice a plan runs on the NPU: a matmul of `out` of a weight's rows (of `in`
// columns), at the prefill buckets in `rows` (1: the decode variant). Compiled into every variant of
// those rows (each power level and precision) beside the layer's own programs, so the slice the
// runtime asks for binds a compiled program.
struct SplitSlice {
  uint32_t out = 0, in = 0;
  std::set<uint32_t> rows;
};

struct VariantSetOptions {
  std::string target_path;               // "" = default target
  std::vector<uint32_t> buckets;         // prefill row counts
  bool decode = true;                    // also the one-row decode variant
  std::vector<PowerLevel> power_levels = {{"max", 0}};
  std::vector<std::string> precisions = {"q4_0"};
  std::vector<SplitSlice> split_slices;  // from a plan (tandem compile --plan); none by default
  bool validate = true;
  uint32_t validate_rows = 4;            // rows of each edge check compared to the reference
  // Each rmsnorm fused with the linears of its cluster into one program (manifest kind
  // norm_linear) instead of one program per op. The runtime launches it where the NPU runs all
  // the cluster's projections whole (Partitioner::lower_forward) and the ops one by one elsewhere.
  bool fuse_clusters = false;
  // The KV cache layout of the appends: auto (each phase's on the cost model), token_major or
  // head_major. A KV the npu owns has one layout for both phases (the decode append's, see
  // CompileCache::kv_pages_for), so one layout makes every append of a run bind.
  std::string kv_layout = "auto";
  // Worker threads for the checks and timed runs (0: one per hardware thread). The MLIR
  // pipeline runs on the calling thread, a variant ahead of them.
  unsigned jobs = 0;
  std::string out_dir;
  // The matmul programs lowered to Hexagon objects (hexagon_lowering.h): where the toolchain is
  // (auto), required (on), or not (off).
  std::string hexagon = "auto";
};

struct ModelIdentity {
  std::string name;  // preset name or file path
  std::string hash;  // SHA-256 of the file, or of the preset's shape
};

struct VariantSetReport {
  compile_cache::Manifest manifest;
  double compile_seconds = 0;     // MLIR pipeline, all variants
  double validate_seconds = 0;    // differential checks and timed executor runs (summed over the workers)
  double wall_seconds = 0;        // the whole compile, start to finish
  unsigned jobs = 0;              // worker threads that checked programs (0: not validated)
  size_t programs_compiled = 0;   // before de-duplication
  size_t programs_stored = 0;     // distinct program files
  size_t split_programs = 0;      // of programs_compiled: weight-split slices (split_slices)
  double worst_error_ratio = 0;   // over all validated programs
  bool hexagon_built = false;     // the cache holds Hexagon objects
  size_t hexagon_programs = 0;
  double hexagon_seconds = 0;
  std::string hexagon_note;       // why not built, or what the DSP could not take
};

// Compiles, validates and writes. `progress(done, total)` after each variant.
Result<VariantSetReport> compile_variant_set(const ModelConfig& model, const ModelIdentity& id,
                                             const npu::TargetModel& target, const VariantSetOptions& o,
                                             const std::function<void(size_t, size_t)>& progress = {});

}  // namespace tandem::compiler
