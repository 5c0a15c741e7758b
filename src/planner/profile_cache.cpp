#include "planner/profile_cache.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "compile_cache/sha256.h"
#include "core/dtype.h"
#include "core/file_io.h"

namespace tandem::planner {

namespace {

// 2: every timing is the fastest of its runs (1 held medians), so a cached median profile is redone.
constexpr const char* kFormat = "tandem-device-profile-2";

}  // namespace

std::string ProfileCacheKey::file_name() const { return compile_cache::sha256_hex(text).substr(0, 20) + ".json"; }

ProfileCacheKey profile_cache_key(const std::vector<ProfiledDevice>& set, const std::string& host_cpu, const ProfileSpace& space,
                                  int threads, int reps) {
  std::ostringstream k;
  k << "format: " << kFormat << "\n";
  k << "host cpu: " << host_cpu << "\n";
  k << "threads: " << threads << "\n";
  for (const ProfiledDevice& d : set) {
    k << "device: " << d.name << " (" << devices::device_kind_name(d.kind) << ") " << d.identity << "\n";
  }
  k << "weight type: " << dtype_name(space.weight_type) << "\n";
  for (const MatmulShape& s : space.shapes) k << "matmul: " << s.name << " " << s.out << "x" << s.in << "\n";
  k << "standard lengths:";
  for (int n : space.standard_lengths) k << " " << n;
  k << "\nratios:";
  for (double r : space.ratios) k << " " << r;
  k << "\nreps: " << reps << "\n";
  // The npu's programs: a compile cache's (by its key and power level) or the operator library's.
  if (space.npu_cache)
    k << "npu programs: compile cache " << space.npu_cache->manifest().key.digest() << " at power level '"
      << space.npu_cache->power_level() << "'\n";
  return ProfileCacheKey{k.str()};
}

namespace {

// The cost DB in `path` if it was made for exactly `key`; else why not.
Result<CostDb> read_cached(const std::string& path, const ProfileCacheKey& key) {
  Result<std::string> text = read_regular_file(path, size_t(64) << 20, "the device profile");
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return NotFound("none cached for these devices and shapes");
    return text.status();
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormat || !j.contains("key") || !j["key"].is_string() ||
      !j.contains("cost_db") || !j["cost_db"].is_object()) {
    return InvalidArgument(path + ": not a " + std::string(kFormat) + " file");
  }
  if (j["key"].get<std::string>() != key.text) return InvalidArgument(path + ": made for other devices or shapes");
  return CostDb::from_json_text(j["cost_db"].dump(), path);
}

}  // namespace

Result<CachedProfile> cached_profile(const std::string& dir, const ProfileCacheKey& key,
                                     const std::function<Result<CostDb>()>& profile) {
  CachedProfile out;
  out.path = dir + "/" + key.file_name();
  Result<CostDb> cached = read_cached(out.path, key);
  if (cached.ok()) {
    out.db = std::move(*cached);
    out.from_cache = true;
    out.why = "cached";
    return out;
  }
  out.why = cached.status().message();
  TANDEM_ASSIGN_OR_RETURN(out.db, profile());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  nlohmann::json j = {{"format", kFormat}, {"key", key.text}, {"cost_db", nlohmann::json::parse(out.db.to_json())}};
  // Written aside (a name of this process's own) and renamed, so a run stopped mid-write leaves no
  // half file for the next to read, and two runs profiling at once each rename a whole file.
  const Status written = write_file_atomically(out.path, j.dump(1) + "\n", "the device profile");
  if (!written.ok()) out.why += "; not cached: " + written.message();
  return out;
}

}  // namespace tandem::planner
