// The one tile shape tandem's AMX code uses, as the 64-byte operand of LDTILECFG: palette 1,
// tiles 0-7 each 16 rows x 64 bytes (16 fp32 sums, or 16 rows of 32 bf16), tiles 8-15 unused.
//
// Include only from files compiled with the AMX flags. The configuration is a constant in static
// storage, never a stack object: llama.cpp's AMX kernels had theirs optimized away before
// LDTILECFG read it (ggml-org/llama.cpp PR 26954).
#pragma once

#include <cstdint>

namespace tandem::cpu::detail {

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

// Namespace-scope const: internal linkage, one read-only copy per including file.
const TileConfig kTileConfig;

}  // namespace tandem::cpu::detail
