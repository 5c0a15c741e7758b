#include "compiler/driver/hexagon_lowering.h"

#include <chrono>
#include <filesystem>
#include <set>
#include <tuple>

#include "compile_cache/sha256.h"
#include "hexagon/codegen/dsp_build.h"

namespace tandem::compiler {

namespace fs = std::filesystem;

Result<HexagonMode> parse_hexagon_mode(const std::string& text) {
  if (text == "auto") return HexagonMode::kAuto;
  if (text == "on") return HexagonMode::kOn;
  if (text == "off") return HexagonMode::kOff;
  return InvalidArgument("--hexagon: '" + text + "' is not auto, on or off");
}

Result<HexagonLoweringReport> lower_to_hexagon(compile_cache::CacheWriter& cache, const std::string& dir,
                                               HexagonMode mode, unsigned jobs) {
  HexagonLoweringReport rep;
  if (mode == HexagonMode::kOff) {
    rep.note = "not lowered to Hexagon (--hexagon off)";
    return rep;
  }
  Result<hexagon::HexagonCompiler> tc = hexagon::find_hexagon_compiler();
  if (!tc.ok()) {
    if (mode == HexagonMode::kOn) return Status(tc.status().code(), "--hexagon on: " + tc.status().message());
    rep.note = "not lowered to Hexagon: " + tc.status().message();
    return rep;
  }
  const auto t0 = std::chrono::steady_clock::now();
  compile_cache::Manifest& m = cache.manifest();
  // One DSP program per distinct (rows, in, out, DSP format, order); the DSP holds every weight
  // type but Q4_0 as Q8_0 (devices/hexagon/weight_repack.h).
  std::vector<hexagon::HexagonProgramSpec> specs;
  std::vector<compile_cache::HexagonProgramEntry> entries;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t, std::string, std::string>> seen;
  std::string skipped;
  for (const compile_cache::ProgramEntry& p : m.programs) {
    if (p.kind != "matmul") continue;
    const std::string format = p.source_quant == "q4_0" ? "q4_0" : "q8_0";
    if (!seen.insert({p.rows, p.in, p.out, format, p.order}).second) continue;
    hexagon::HexagonProgramSpec s{p.name, format == "q4_0" ? hexagon::WeightFormat::kQ4_0 : hexagon::WeightFormat::kQ8_0,
                                  p.rows, p.in, p.out, p.order == "weight_stationary"};
    if (std::string why = hexagon::why_not_lowerable(s); !why.empty()) {
      if (skipped.empty()) skipped = p.name + ": " + why;
      continue;
    }
    entries.push_back({uint32_t(specs.size()), p.name, p.rows, p.in, p.out, format, p.order});
    specs.push_back(std::move(s));
  }
  const std::string sub = dir + "/hexagon";
  std::error_code ec;
  const bool existed = fs::exists(sub, ec);
  TANDEM_ASSIGN_OR_RETURN(hexagon::DspBuild b, hexagon::build_dsp_programs(specs, sub, *tc, std::max(1u, jobs)));
  if (!existed) {  // the folders go last (the writer removes newest first)
    cache.adopt(sub);
    cache.adopt(sub + "/src");
    cache.adopt(sub + "/obj");
  }
  auto record = [&](const std::string& path) -> Result<compile_cache::HexagonFile> {
    TANDEM_ASSIGN_OR_RETURN(std::string hash, compile_cache::sha256_file(path));
    cache.adopt(path);
    return compile_cache::HexagonFile{fs::relative(path, dir).string(), hash, uint64_t(fs::file_size(path, ec))};
  };
  compile_cache::HexagonObjects h;
  h.target = tc->version;
  h.toolchain = tc->clang + " + " + tc->lld;
  for (const std::string& f : tc->cflags) h.toolchain += " " + f;
  TANDEM_ASSIGN_OR_RETURN(h.binary, record(b.binary));
  for (const std::string& s : b.sources) {
    TANDEM_ASSIGN_OR_RETURN(compile_cache::HexagonFile f, record(s));
    h.sources.push_back(std::move(f));
  }
  for (const std::string& o : b.objects) {
    TANDEM_ASSIGN_OR_RETURN(compile_cache::HexagonFile f, record(o));
    h.objects.push_back(std::move(f));
  }
  h.programs = std::move(entries);
  m.has_hexagon = true;
  m.hexagon = std::move(h);
  rep.built = true;
  rep.programs = specs.size();
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!skipped.empty()) rep.note = "not on the DSP (left to the generic kernels' fallback): " + skipped;
  return rep;
}

}  // namespace tandem::compiler
