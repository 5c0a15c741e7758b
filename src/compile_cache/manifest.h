// The compile cache's manifest (manifest.json): what was compiled for which model, target,
// compiler and quant config, every variant (phase x bucket x power level x precision) with its
// programs, and the SHA-256 of every program file. Parsing is strict: a missing or mistyped field
// is an error naming the file and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tandem::compile_cache {

// The cache key: a cache answers only a runtime whose key is equal.
struct CacheKey {
  std::string model_hash;      // SHA-256 of the model file (of its shape description for presets)
  std::string target_hash;     // SHA-256 of the NPU target's fingerprint (every number of the model)
  std::string driver_version;  // compiler + program format version
  std::string quant_config;    // precisions compiled, e.g. "q4_0"
  bool operator==(const CacheKey&) const = default;
  std::string digest() const;  // SHA-256 over the four fields
};

// A KV append's cache geometry (npu/oplib/kv_cache.h).
struct KvEntry {
  uint32_t capacity = 0, heads = 0, head_dim = 0, page_tokens = 0;
  std::string layout;  // token_major / head_major
  std::string phase;   // the phase the layout was chosen for
};

// An elementwise program's op (npu/oplib/elementwise.h).
struct ElementwiseEntry {
  std::string op;  // rmsnorm / swiglu / add
  uint32_t cols = 0;
  double eps = 0;
};

// A fused rmsnorm -> projections program's projections (npu/oplib/norm_linear.h).
struct NormLinearEntry {
  std::vector<uint32_t> outs;  // each projection's out dim
  double eps = 0;
};

// One program file. kind "matmul": x [rows, in] by a `format` weight pack -> y [rows, out];
// kind "kv_append": `rows` new tokens into a cache of `kv`'s geometry; kind "elementwise":
// `elementwise.op` over [rows, elementwise.cols]; kind "norm_linear": rmsnorm of x [rows, in],
// then one `format` pack per norm_linear.outs (the matmul fields but `out`). Fields a kind does
// not name stay unused.
struct ProgramEntry {
  std::string name;          // unique in the cache
  std::string file;          // relative to the cache directory (binary Program format)
  std::string sha256;        // of the file's bytes
  uint64_t bytes = 0;
  std::string kind = "matmul";
  KvEntry kv;                // kind kv_append
  ElementwiseEntry elementwise;  // kind elementwise
  NormLinearEntry norm_linear;   // kind norm_linear
  uint32_t rows = 0, in = 0, out = 0;
  std::string format;        // pack format: f16, q8_0, q4_0
  std::string source_quant;  // the weight's storage format
  std::string order;         // weight_stationary / activation_stationary
  bool double_buffer = true, double_buffer_out = true;
  uint32_t arrays = 0;
  double est_cycles = 0;
  double max_error_ratio = -1;  // differential validation (-1: not validated)
};

struct FallbackEntry {
  std::string op, device, reason;
  double switch_cost_s = 0;
};

struct VariantEntry {
  std::string phase;        // prefill / decode
  uint32_t rows = 0;        // the bucket (decode: 1)
  std::string power_level;  // name, e.g. "max" or "2.0W"
  double power_cap_w = 0;   // 0 = uncapped
  std::string precision;    // weight storage format
  std::vector<std::string> programs;  // ProgramEntry names, in launch order
  std::vector<FallbackEntry> fallbacks;
  double est_seconds = 0;   // sum of the programs' estimates
  // The programs run one after the other on the timed executor (-1: not timed, --no-validate):
  // what the estimate predicts, and the bytes they move to and from DDR.
  double exec_seconds = -1;
  uint64_t ddr_bytes = 0;
  double compile_seconds = 0;
};

// The compiled programs lowered to Hexagon (hexagon/codegen): one DSP binary linking a program per
// distinct matmul shape, its sources and objects beside it, each file SHA-256-recorded. Absent
// when the cache was compiled where clang-19 / ld.lld-19 were not.
struct HexagonFile {
  std::string file;  // relative to the cache directory
  std::string sha256;
  uint64_t bytes = 0;
};
struct HexagonProgramEntry {
  uint32_t index = 0;  // THX_METHOD_PROGRAM's arg[0]
  std::string program;  // the npu program it lowers (ProgramEntry::name)
  uint32_t rows = 0, in = 0, out = 0;
  std::string format;  // the DSP's weight format: q8_0 / q4_0
  std::string order;   // weight_stationary / activation_stationary
};
struct HexagonObjects {
  std::string target;     // the ISA the binary was built for: "hexagon-v66-hvx128"
  std::string toolchain;  // the compiler that built it (its path and flags), for people
  HexagonFile binary;
  std::vector<HexagonFile> sources, objects;
  std::vector<HexagonProgramEntry> programs;
};

struct Manifest {
  int format_version = 2;  // 2: programs have a kind (matmul, kv_append, elementwise, norm_linear)
  CacheKey key;
  std::string model_name, target_name;
  std::vector<uint32_t> buckets;
  std::vector<VariantEntry> variants;
  std::vector<ProgramEntry> programs;
  bool has_hexagon = false;
  HexagonObjects hexagon;  // valid when has_hexagon

  const ProgramEntry* find_program(const std::string& name) const;
  std::string to_json_text() const;
  static Result<Manifest> from_json_text(const std::string& text, const std::string& file_label);
};

}  // namespace tandem::compile_cache
