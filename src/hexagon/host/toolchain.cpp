#include "hexagon/host/toolchain.h"

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

// Set by src/hexagon/CMakeLists.txt when clang-19, ld.lld-19 (the DSP binary) and qemu-hexagon
// were found; empty otherwise.
#ifndef TANDEM_HEXAGON_QEMU
#define TANDEM_HEXAGON_QEMU ""
#endif
#ifndef TANDEM_HEXAGON_DSP_BINARY
#define TANDEM_HEXAGON_DSP_BINARY ""
#endif
#ifndef TANDEM_HEXAGON_CLANG_PATH
#define TANDEM_HEXAGON_CLANG_PATH ""
#endif
#ifndef TANDEM_HEXAGON_LLD_PATH
#define TANDEM_HEXAGON_LLD_PATH ""
#endif

namespace tandem::hexagon {

namespace {

namespace fs = std::filesystem;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// The DSP binary beside the running program: <dir of the executable>/../lib/hexagon/ is where the
// build puts it (build/<preset>/bin/tandem, build/<preset>/lib/hexagon/) and where an install or a
// copied tree keeps it, so a moved build still finds its DSP program.
std::string beside_executable() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path p = exe.parent_path().parent_path() / "lib" / "hexagon" / "tandem_hexagon_dsp";
  return access(p.c_str(), R_OK) == 0 ? p.string() : "";
}

// A program on PATH (installed after this build was configured).
std::string on_path(const std::string& name = "qemu-hexagon") {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string p = dir + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string tool(const char* env_name, const char* built, const char* name) {
  if (const char* v = env(env_name)) return v;
  if (*built && access(built, X_OK) == 0) return built;
  return on_path(name);
}

// lib/hexagon beside the executable's bin/, else the build's (where its DSP binary lies).
std::string lib_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path p = exe.parent_path().parent_path() / "lib" / "hexagon";
    if (fs::exists(p / "cflags", ec)) return p.string();
  }
  const fs::path built = fs::path(TANDEM_HEXAGON_DSP_BINARY).parent_path();
  if (!built.empty() && fs::exists(built / "cflags", ec)) return built.string();
  return "";
}

}  // namespace

Result<HexagonToolchain> find_hexagon_toolchain() {
  HexagonToolchain t;
  if (const char* v = env("TANDEM_HEXAGON_QEMU")) t.qemu = v;
  else if (*TANDEM_HEXAGON_QEMU && access(TANDEM_HEXAGON_QEMU, X_OK) == 0) t.qemu = TANDEM_HEXAGON_QEMU;
  else t.qemu = on_path();
  if (const char* v = env("TANDEM_HEXAGON_DSP")) t.dsp_binary = v;
  else if (std::string b = beside_executable(); !b.empty()) t.dsp_binary = b;
  else t.dsp_binary = TANDEM_HEXAGON_DSP_BINARY;
  std::string missing;
  if (t.qemu.empty()) missing = "qemu-hexagon is not installed (not at build time, not on PATH)";
  else if (access(t.qemu.c_str(), X_OK) != 0) missing = t.qemu + " is not executable";
  if (missing.empty()) {
    if (t.dsp_binary.empty()) missing = "the DSP binary was not built (no clang-19 / ld.lld-19 at build time)";
    else if (access(t.dsp_binary.c_str(), R_OK) != 0) missing = t.dsp_binary + " is missing";
  }
  if (!missing.empty())
    return Unsupported("hexagon toolchain not found (apt-get install clang-19 lld-19 qemu-user): " + missing);
  return t;
}

Result<HexagonCompiler> find_hexagon_compiler() {
  HexagonCompiler c;
  c.clang = tool("TANDEM_HEXAGON_CLANG", TANDEM_HEXAGON_CLANG_PATH, "clang-19");
  c.lld = tool("TANDEM_HEXAGON_LLD", TANDEM_HEXAGON_LLD_PATH, "ld.lld-19");
  c.lib_dir = lib_dir();
  std::string missing;
  if (c.clang.empty()) missing = "clang-19 is not installed";
  else if (c.lld.empty()) missing = "ld.lld-19 is not installed";
  else if (c.lib_dir.empty()) missing = "the DSP runtime (lib/hexagon: rt/, include/, cflags) was not built";
  if (!missing.empty())
    return Unsupported("hexagon compiler not found (apt-get install clang-19 lld-19, then rebuild): " + missing);
  std::ifstream flags(c.lib_dir + "/cflags");
  for (std::string f; std::getline(flags, f);)
    if (!f.empty()) c.cflags.push_back(f);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(c.lib_dir + "/rt", ec))
    if (e.path().extension() == ".o") c.runtime_objects.push_back(e.path().string());
  std::sort(c.runtime_objects.begin(), c.runtime_objects.end());
  if (c.cflags.empty() || c.runtime_objects.empty())
    return Unsupported("hexagon compiler: " + c.lib_dir + " holds no cflags or no rt/*.o (rebuild tandem)");
  c.version = "hexagon-v66-hvx128";
  for (const std::string& f : c.cflags)
    if (f.rfind("-mv", 0) == 0) c.version = "hexagon-" + f.substr(2) + "-hvx128";
  return c;
}

}  // namespace tandem::hexagon
