// Runs a build tool (clang-19, ld.lld-19) to completion with its diagnostics captured: what the
// DSP program builder needs, without a shell.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tandem::hexagon {

// argv[0] is the program's path. Ok when it exits 0; otherwise the error names the tool, how it
// ended and the first lines of what it wrote to stderr.
Status run_tool(const std::vector<std::string>& argv);

}  // namespace tandem::hexagon
