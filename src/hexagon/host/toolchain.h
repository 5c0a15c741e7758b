// Where the Hexagon DSP process comes from: the qemu-hexagon and the DSP binary CMake found and
// built (compile definitions), each overridable by an environment variable.
#pragma once

#include <string>

#include "core/status.h"

namespace tandem::hexagon {

struct HexagonToolchain {
  std::string qemu;        // qemu-hexagon, or TANDEM_HEXAGON_QEMU
  std::string dsp_binary;  // the freestanding Hexagon ELF built from src/hexagon/dsp, or TANDEM_HEXAGON_DSP
};

// Both found and usable, or Unsupported("hexagon toolchain not found (apt-get install clang-19
// lld-19 qemu-user)", with what is missing).
Result<HexagonToolchain> find_hexagon_toolchain();

}  // namespace tandem::hexagon
