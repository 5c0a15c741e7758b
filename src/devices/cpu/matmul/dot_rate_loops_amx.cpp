// The tile loop that dot_rates.cpp times for the AMX-BF16 rate: tdpbf16ps into four independent
// accumulator tiles (the most that leaves room for two A and two B tiles), so one product's
// latency does not stall the next and the loop's time is the instruction's throughput. Run it
// only after amx_bf16_usable() (the process must have asked Linux for the tile state).
#include <immintrin.h>

#include "devices/cpu/matmul/amx_tile_config.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu::detail {

__attribute__((noinline)) float amx_bf16_tile_loop(long iterations) {
  // bf16 pairs of 1.0 against pairs of 2^-31: tiny sums, no overflow (as the AVX-512 loop).
  alignas(64) uint32_t ones[16][16], tiny[16][16];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) ones[r][c] = 0x3f803f80u, tiny[r][c] = 0x30003000u;
  _tile_loadconfig(&kTileConfig);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, tiny, 64);
  _tile_loadd(7, tiny, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (long k = 0; k < iterations; ++k) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float out[4][16][16];
  _tile_stored(0, out[0], 64);
  _tile_stored(1, out[1], 64);
  _tile_stored(2, out[2], 64);
  _tile_stored(3, out[3], 64);
  _tile_release();
  return out[0][0][0] + out[1][15][15] + out[2][7][7] + out[3][3][3];
}

}  // namespace tandem::cpu::detail
