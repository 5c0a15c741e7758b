// The compile cache's npu matmul programs lowered to Hexagon: one program per distinct shape,
// weight format and loop order (hexagon/codegen), built into one DSP binary under the cache's
// hexagon/ folder and recorded, every file SHA-256-hashed, in the manifest (HexagonObjects).
#pragma once

#include <string>

#include "compile_cache/cache.h"
#include "core/status.h"

namespace tandem::compiler {

enum class HexagonMode { kAuto, kOn, kOff };  // where clang-19 / ld.lld-19 are; required; never
Result<HexagonMode> parse_hexagon_mode(const std::string& text);  // "auto", "on", "off"

struct HexagonLoweringReport {
  bool built = false;
  size_t programs = 0;
  double seconds = 0;
  std::string note;  // why not built, or which programs the DSP cannot take
};

// After every variant was added to `cache` (whose folder is `dir`), before its finish().
Result<HexagonLoweringReport> lower_to_hexagon(compile_cache::CacheWriter& cache, const std::string& dir,
                                               HexagonMode mode, unsigned jobs);

}  // namespace tandem::compiler
