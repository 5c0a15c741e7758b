// Where the Hexagon DSP process comes from. qemu-hexagon: TANDEM_HEXAGON_QEMU, else the one CMake
// found, else PATH. The DSP binary: TANDEM_HEXAGON_DSP, else lib/hexagon/tandem_hexagon_dsp beside
// the running executable's bin/ (a moved or installed tree), else the build's own path.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tandem::hexagon {

struct HexagonToolchain {
  std::string qemu;        // qemu-hexagon, or TANDEM_HEXAGON_QEMU
  std::string dsp_binary;  // the freestanding Hexagon ELF built from src/hexagon/dsp, or TANDEM_HEXAGON_DSP
};

// Both found and usable, or Unsupported("hexagon toolchain not found (apt-get install clang-19
// lld-19 qemu-user)", with what is missing).
Result<HexagonToolchain> find_hexagon_toolchain();

// What compiling programs for the DSP takes (tandem compile; no qemu needed): clang-19 and
// ld.lld-19 (TANDEM_HEXAGON_CLANG / TANDEM_HEXAGON_LLD, else CMake's, else PATH) and the DSP
// runtime's objects, headers and flags that the build leaves in lib/hexagon/ (rt/*.o, include/,
// cflags) beside the executable's bin/, else in the build's own lib/hexagon.
struct HexagonCompiler {
  std::string clang, lld;
  std::string lib_dir;               // holds rt/, include/, cflags
  std::vector<std::string> cflags;   // the runtime's own compile flags (lib_dir/cflags)
  std::vector<std::string> runtime_objects;  // lib_dir/rt/*.o, sorted
  std::string version;               // the target the flags name, e.g. "hexagon-v66-hvx128"
};
Result<HexagonCompiler> find_hexagon_compiler();

}  // namespace tandem::hexagon
