// A compile cache directory: manifest.json plus one binary Program file per program. Writing
// hashes every program; reading refuses a cache compiled for another key and any program whose
// bytes no longer match the SHA-256 the manifest recorded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compile_cache/manifest.h"
#include "core/kv_layout.h"
#include "core/status.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::compile_cache {

// The compiler + Program format version the cache key carries: a new compiler never trusts an
// older compiler's programs.
std::string driver_version();

// The cache key parts that do not depend on the model.
std::string target_hash(const npu::TargetModel& t);

// The key of a cache for this model (its SHA-256), target and quant config, by this compiler.
CacheKey key_for(std::string model_hash, const npu::TargetModel& t, std::string quant_config);

// Programs are written as they are compiled and manifest.json last, each file atomically. A writer
// destroyed before finish() (an error, a full disk, Ctrl-C) removes the program files it created,
// so a cache folder holds a manifest and its programs, or what it held before.
class CacheWriter {
 public:
  explicit CacheWriter(std::string dir) : dir_(std::move(dir)) {}
  ~CacheWriter();
  CacheWriter(const CacheWriter&) = delete;
  CacheWriter& operator=(const CacheWriter&) = delete;
  // Writes the program (binary format) unless an identical one is already stored, and returns its
  // entry's name. Programs are content-addressed: identical programs of different variants share
  // one file.
  Result<std::string> add_program(const npu::Program& p, ProgramEntry entry);
  // The same for a program its caller already serialized (npu::serialize) and hashed (sha256_hex
  // of those bytes), so a driver that keys programs by hash does not do that work twice.
  Result<std::string> add_serialized(const std::string& program_name, const std::vector<uint8_t>& bytes,
                                     const std::string& sha256, ProgramEntry entry);
  // The name of a stored program with these bytes and this shape, if there is one.
  std::optional<std::string> stored(const std::string& sha256, const ProgramEntry& entry) const;
  Manifest& manifest() { return manifest_; }
  // A file written into the cache by someone else (the Hexagon builder): removed with the rest
  // unless finish() is reached.
  void adopt(const std::string& path) { created_.push_back(path); }
  Status finish();  // writes manifest.json
 private:
  std::string dir_;
  Manifest manifest_;
  std::vector<std::string> created_;  // files and folders this writer made, removed unless finished
  bool finished_ = false;
};

class CompileCache {
 public:
  // Reads and checks manifest.json: its key must equal `expected` (else the error names the part
  // that differs: a stale cache is never used).
  static Result<CompileCache> open(const std::string& dir, const CacheKey& expected);
  // Like open, without a key check (inspection tools).
  static Result<CompileCache> open_any(const std::string& dir);

  const Manifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }
  // Restricts the finds below to the programs of the variants compiled at this power level
  // ("max", "1.5W", ...). The default is "max" when the cache has it, else every program. An
  // unknown level is an error that lists the cache's levels.
  Status select_power_level(const std::string& level);
  const std::string& power_level() const { return level_; }
  // The Hexagon objects (manifest.h's HexagonObjects) checked for a DSP of ISA `target`: present
  // (else an error with the command that compiles them), built for that target, and every file's
  // bytes the SHA-256 the manifest recorded (else DataLoss naming the file).
  Status verify_hexagon(const std::string& target) const;
  std::string hexagon_binary_path() const { return dir_ + "/" + manifest_.hexagon.binary.file; }
  // The Hexagon program of this shape and DSP weight format (q8_0 / q4_0), or nullptr.
  const HexagonProgramEntry* find_hexagon(uint32_t rows, uint32_t in, uint32_t out, const std::string& format) const;
  // The matmul program of this shape and weight storage format, or nullptr.
  const ProgramEntry* find(uint32_t rows, uint32_t in, uint32_t out, const std::string& source_quant) const;
  // The elementwise program of this op and shape (and, for rmsnorm, epsilon as fp32), or nullptr.
  const ProgramEntry* find_elementwise(const std::string& op, uint32_t rows, uint32_t cols, float eps) const;
  // The fused rmsnorm + projections program (kind norm_linear) of this shape: x [rows, in], the
  // projections' out dims in order, their weights' storage format, epsilon as fp32; or nullptr.
  const ProgramEntry* find_norm_linear(uint32_t rows, uint32_t in, const std::vector<uint32_t>& outs,
                                       const std::string& source_quant, float eps) const;
  // The KV append of `rows` tokens into a cache of g's capacity, heads, head_dim and layout (any
  // page size: pages shape the program's transfers, not the addressing), or nullptr.
  const ProgramEntry* find_kv_append(uint32_t rows, const KvGeometry& g) const;
  // The pages an npu-owned KV of this shape uses: the layout (and page size) of the cache's decode
  // append, else of any append of this shape; nullopt when the cache holds none.
  std::optional<KvGeometry> kv_pages_for(uint32_t capacity, uint32_t heads, uint32_t head_dim) const;
  // Loads a program, refusing it when the file's SHA-256 differs from the manifest's.
  Result<npu::Program> load(const ProgramEntry& e) const;

 private:
  bool selected(const ProgramEntry& p) const;
  std::string dir_;
  Manifest manifest_;
  std::string level_;                 // "" = every program
  std::vector<std::string> allowed_;  // names of the selected level's programs
};

}  // namespace tandem::compile_cache
