#include "hexagon/host/toolchain.h"

#include <cstdlib>

#include <unistd.h>

// Set by src/hexagon/CMakeLists.txt when clang-19, ld.lld-19 (the DSP binary) and qemu-hexagon
// were found; empty otherwise.
#ifndef TANDEM_HEXAGON_QEMU
#define TANDEM_HEXAGON_QEMU ""
#endif
#ifndef TANDEM_HEXAGON_DSP_BINARY
#define TANDEM_HEXAGON_DSP_BINARY ""
#endif

namespace tandem::hexagon {

namespace {

std::string from_env_or(const char* name, const char* built) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(built);
}

}  // namespace

Result<HexagonToolchain> find_hexagon_toolchain() {
  HexagonToolchain t{from_env_or("TANDEM_HEXAGON_QEMU", TANDEM_HEXAGON_QEMU),
                     from_env_or("TANDEM_HEXAGON_DSP", TANDEM_HEXAGON_DSP_BINARY)};
  std::string missing;
  if (t.qemu.empty()) missing = "qemu-hexagon was not found at build time";
  else if (access(t.qemu.c_str(), X_OK) != 0) missing = t.qemu + " is not executable";
  if (missing.empty()) {
    if (t.dsp_binary.empty()) missing = "the DSP binary was not built (no clang-19 / ld.lld-19)";
    else if (access(t.dsp_binary.c_str(), R_OK) != 0) missing = t.dsp_binary + " is missing";
  }
  if (!missing.empty())
    return Unsupported("hexagon toolchain not found (apt-get install clang-19 lld-19 qemu-user): " + missing);
  return t;
}

}  // namespace tandem::hexagon
