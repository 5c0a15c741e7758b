// Builds a DSP binary from compiled programs: each program's C (kernel_source.h) compiled by
// clang-19 for Hexagon v66 + HVX-128, the program table, then linked by ld.lld-19 with the DSP
// runtime's objects into one static ELF that qemu-hexagon (or, built for a phone's ISA, FastRPC)
// runs. The compile cache keeps the sources, objects and binary (compile_cache/hexagon_objects.h).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "hexagon/codegen/kernel_source.h"
#include "hexagon/host/toolchain.h"

namespace tandem::hexagon {

struct DspBuild {
  std::string binary;                 // path of the linked ELF
  std::vector<std::string> sources;   // per program, then the table's, in order
  std::vector<std::string> objects;   // the same, compiled
};

// Writes into dir (created): src/program_<i>.c, src/programs.c, obj/*.o and tandem_hexagon_dsp.
// jobs: clang processes at once (>= 1).
Result<DspBuild> build_dsp_programs(const std::vector<HexagonProgramSpec>& specs, const std::string& dir,
                                    const HexagonCompiler& tc, unsigned jobs);

}  // namespace tandem::hexagon
