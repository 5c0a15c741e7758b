#include "compile_cache/cache.h"

#include <algorithm>
#include <filesystem>

#include "compile_cache/sha256.h"
#include "core/file_io.h"

namespace tandem::compile_cache {

namespace fs = std::filesystem;

std::string driver_version() { return "tandem-npu-compiler 0.3 (MLIR 19; Program binary v1)"; }

std::string target_hash(const npu::TargetModel& t) { return sha256_hex(t.fingerprint()); }

CacheKey key_for(std::string model_hash, const npu::TargetModel& t, std::string quant_config) {
  return {std::move(model_hash), target_hash(t), driver_version(), std::move(quant_config)};
}

namespace {
// A manifest lists a few hundred programs in a few hundred KB; anything near this is not one.
constexpr size_t kMaxManifestBytes = size_t(64) << 20;
}  // namespace

Result<std::string> CacheWriter::add_program(const npu::Program& p, ProgramEntry e) {
  const std::vector<uint8_t> bytes = npu::serialize(p);
  return add_serialized(p.name, bytes, sha256_hex(bytes.data(), bytes.size()), std::move(e));
}

std::optional<std::string> CacheWriter::stored(const std::string& sha256, const ProgramEntry& e) const {
  for (const ProgramEntry& existing : manifest_.programs)
    if (existing.sha256 == sha256 && existing.rows == e.rows && existing.in == e.in && existing.out == e.out &&
        existing.format == e.format)
      return existing.name;
  return std::nullopt;
}

Result<std::string> CacheWriter::add_serialized(const std::string& program_name, const std::vector<uint8_t>& bytes,
                                                const std::string& hash, ProgramEntry e) {
  if (auto name = stored(hash, e)) return *name;
  for (const fs::path& folder : {fs::path(dir_), fs::path(dir_) / "programs"}) {
    std::error_code ec;
    if (fs::is_directory(folder, ec)) continue;
    fs::create_directory(folder, ec);
    if (ec) return IoError(folder.string() + ": cannot create the compile cache folder: " + ec.message());
    created_.push_back(folder.string());
  }
  e.name = program_name + "-" + hash.substr(0, 12);
  e.file = "programs/" + e.name + ".tnpu";
  e.sha256 = hash;
  e.bytes = bytes.size();
  const std::string path = dir_ + "/" + e.file;
  std::error_code ec;
  const bool existed = fs::exists(path, ec);
  TANDEM_RETURN_IF_ERROR(write_file_atomically(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "a compiled program"));
  if (!existed) created_.push_back(path);
  manifest_.programs.push_back(e);
  return e.name;
}

Status CacheWriter::finish() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return IoError(dir_ + ": cannot create: " + ec.message());
  TANDEM_RETURN_IF_ERROR(write_file_atomically(dir_ + "/manifest.json", manifest_.to_json_text(), "the compile cache manifest"));
  finished_ = true;
  return Status::Ok();
}

CacheWriter::~CacheWriter() {
  if (finished_) return;
  // Newest first: the folders (made before their files) go last, and only when empty.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    std::error_code ec;
    if (fs::is_directory(*it, ec)) {
      if (fs::is_empty(*it, ec)) fs::remove(*it, ec);
    } else {
      fs::remove(*it, ec);
    }
  }
}

Result<CompileCache> CompileCache::open_any(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  TANDEM_ASSIGN_OR_RETURN(std::string text, read_regular_file(path, kMaxManifestBytes, "the compile cache manifest"));
  CompileCache c;
  c.dir_ = dir;
  TANDEM_ASSIGN_OR_RETURN(c.manifest_, Manifest::from_json_text(text, path));
  // Uncapped variants by default: the fastest programs, when the cache has them.
  const auto& vs = c.manifest_.variants;
  if (std::any_of(vs.begin(), vs.end(), [](const VariantEntry& v) { return v.power_level == "max"; }))
    TANDEM_RETURN_IF_ERROR(c.select_power_level("max"));
  return c;
}

Result<CompileCache> CompileCache::open(const std::string& dir, const CacheKey& expected) {
  TANDEM_ASSIGN_OR_RETURN(CompileCache c, open_any(dir));
  const CacheKey& k = c.manifest_.key;
  auto stale = [&](const char* what, const std::string& have, const std::string& want) {
    return InvalidArgument(dir + "/manifest.json: compiled for another " + std::string(what) + " (cache has '" + have +
                           "', this run needs '" + want + "'); recompile with tandem compile");
  };
  if (k.model_hash != expected.model_hash) return stale("model", k.model_hash, expected.model_hash);
  if (k.target_hash != expected.target_hash) return stale("NPU target", k.target_hash, expected.target_hash);
  if (k.driver_version != expected.driver_version) return stale("compiler", k.driver_version, expected.driver_version);
  // The cache's quant config lists the formats it was compiled for ("q4_0,q8_0"); a run needs the
  // one its npu packs the model's weights in.
  bool holds = false;
  for (size_t at = 0; at <= k.quant_config.size();) {
    const size_t comma = std::min(k.quant_config.find(',', at), k.quant_config.size());
    holds = holds || k.quant_config.compare(at, comma - at, expected.quant_config) == 0;
    at = comma + 1;
  }
  if (!holds) return stale("quant config", k.quant_config, expected.quant_config);
  return c;
}

Status CompileCache::verify_hexagon(const std::string& target) const {
  const HexagonObjects& h = manifest_.hexagon;
  if (!manifest_.has_hexagon)
    return NotFound(dir_ + ": the compile cache holds no Hexagon objects (it was compiled where clang-19 / ld.lld-19 "
                    "were missing); install them and run tandem compile -m MODEL -o " + dir_ + " again");
  if (h.target != target)
    return InvalidArgument(dir_ + "/manifest.json: the Hexagon objects were built for '" + h.target + "', this DSP runs '" +
                           target + "'; recompile with tandem compile");
  std::vector<const HexagonFile*> files = {&h.binary};
  for (const HexagonFile& f : h.objects) files.push_back(&f);
  for (const HexagonFile& f : h.sources) files.push_back(&f);
  for (const HexagonFile* f : files) {
    const std::string path = dir_ + "/" + f->file;
    Result<std::string> got = sha256_file(path);
    if (!got.ok()) return DataLoss(path + ": a Hexagon file the manifest lists cannot be read: " + got.status().message());
    if (*got != f->sha256)
      return DataLoss(path + ": SHA-256 " + got->substr(0, 16) + "... is not the manifest's " + f->sha256.substr(0, 16) +
                      "...: the file changed after tandem compile wrote it (recompile; it is never run)");
  }
  return Status::Ok();
}

const HexagonProgramEntry* CompileCache::find_hexagon(uint32_t rows, uint32_t in, uint32_t out,
                                                      const std::string& format) const {
  if (!manifest_.has_hexagon) return nullptr;
  for (const HexagonProgramEntry& p : manifest_.hexagon.programs)
    if (p.rows == rows && p.in == in && p.out == out && p.format == format) return &p;
  return nullptr;
}

Status CompileCache::select_power_level(const std::string& level) {
  std::vector<std::string> names, levels;
  for (const VariantEntry& v : manifest_.variants) {
    if (std::find(levels.begin(), levels.end(), v.power_level) == levels.end()) levels.push_back(v.power_level);
    if (v.power_level == level) names.insert(names.end(), v.programs.begin(), v.programs.end());
  }
  if (names.empty()) {
    std::string have;
    for (const std::string& l : levels) have += (have.empty() ? "" : ", ") + l;
    return InvalidArgument(dir_ + "/manifest.json: no variants at power level '" + level + "' (the cache has: " + have + ")");
  }
  level_ = level;
  allowed_ = std::move(names);
  return Status::Ok();
}

bool CompileCache::selected(const ProgramEntry& p) const {
  return level_.empty() || std::find(allowed_.begin(), allowed_.end(), p.name) != allowed_.end();
}

const ProgramEntry* CompileCache::find(uint32_t rows, uint32_t in, uint32_t out, const std::string& source_quant) const {
  for (const ProgramEntry& p : manifest_.programs)
    if (selected(p) && p.kind == "matmul" && p.rows == rows && p.in == in && p.out == out && p.source_quant == source_quant) return &p;
  return nullptr;
}

const ProgramEntry* CompileCache::find_elementwise(const std::string& op, uint32_t rows, uint32_t cols, float eps) const {
  for (const ProgramEntry& p : manifest_.programs)
    if (selected(p) && p.kind == "elementwise" && p.elementwise.op == op && p.rows == rows && p.elementwise.cols == cols &&
        (op != "rmsnorm" || float(p.elementwise.eps) == eps))
      return &p;
  return nullptr;
}

namespace {

bool same_kv(const KvEntry& e, uint32_t capacity, uint32_t heads, uint32_t head_dim) {
  return e.capacity == capacity && e.heads == heads && e.head_dim == head_dim;
}

}  // namespace

const ProgramEntry* CompileCache::find_kv_append(uint32_t rows, const KvGeometry& g) const {
  for (const ProgramEntry& p : manifest_.programs)
    if (g.fp16() && selected(p) && p.kind == "kv_append" && p.rows == rows && same_kv(p.kv, g.capacity, g.heads, g.head_dim) &&
        kv_layout_from_name(p.kv.layout) == g.layout)
      return &p;
  return nullptr;
}

std::optional<KvGeometry> CompileCache::kv_pages_for(uint32_t capacity, uint32_t heads, uint32_t head_dim) const {
  const ProgramEntry* chosen = nullptr;
  for (const ProgramEntry& p : manifest_.programs)
    if (selected(p) && p.kind == "kv_append" && same_kv(p.kv, capacity, heads, head_dim) && kv_layout_from_name(p.kv.layout) &&
        (!chosen || (p.kv.phase == "decode" && chosen->kv.phase != "decode")))
      chosen = &p;
  if (!chosen) return std::nullopt;
  return KvGeometry{capacity, heads, head_dim, chosen->kv.page_tokens, *kv_layout_from_name(chosen->kv.layout)};
}

const ProgramEntry* CompileCache::find_norm_linear(uint32_t rows, uint32_t in, const std::vector<uint32_t>& outs,
                                                   const std::string& source_quant, float eps) const {
  for (const ProgramEntry& p : manifest_.programs)
    if (selected(p) && p.kind == "norm_linear" && p.rows == rows && p.in == in && p.norm_linear.outs == outs &&
        p.source_quant == source_quant && float(p.norm_linear.eps) == eps)
      return &p;
  return nullptr;
}

Result<npu::Program> CompileCache::load(const ProgramEntry& e) const {
  const std::string path = dir_ + "/" + e.file;
  // Read no more than the manifest says the program is: a program swapped for a FIFO, a device or
  // a huge file is refused without blocking or filling memory. Every failure here is the cache
  // not being what was compiled: refused (DataLoss), never worked around.
  Result<std::string> read = read_regular_file(path, e.bytes, "a compiled program");
  if (!read.ok()) return DataLoss(read.status().message() + "; refusing the compile cache (recompile with tandem compile)");
  const std::string& bytes = *read;
  if (bytes.size() != e.bytes)
    return DataLoss(path + ": " + std::to_string(bytes.size()) + " bytes where the manifest recorded " +
                    std::to_string(e.bytes) + "; refusing to run a modified program (recompile with tandem compile)");
  const std::string hash = sha256_hex(bytes.data(), bytes.size());
  if (hash != e.sha256)
    return DataLoss(path + ": SHA-256 " + hash + " does not match the manifest's " + e.sha256 +
                    "; refusing to run a modified program (recompile with tandem compile)");
  auto p = npu::deserialize(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (!p.ok()) return InvalidArgument(path + ": " + p.status().message());
  return p;
}

}  // namespace tandem::compile_cache
