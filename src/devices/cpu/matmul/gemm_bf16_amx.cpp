// AMX-BF16 prefill GEMM for BF16 and F16 weights (and the packed block types, below): the same
// arithmetic as the AVX-512 bf16 GEMM (activations rounded to bf16, F16 weights rounded to bf16,
// products summed in fp32), on the tile unit.
//
// Why: one tdpbf16ps multiplies a 16 x 32 bf16 tile by a 32 x 16 one into 16 x 16 fp32 sums,
// 8192 MACs. Timed by dot_rates.cpp on an Emerald Rapids core (Xeon family 6 model 207): 510
// GMAC/s, against 78 for fp32 FMAs and 38 for vdpbf16ps. There the AVX-512 bf16 GEMM is no faster
// than the fp32 one, and 16-bit prompts had run level with llama.cpp's (F16 pp512 at 2 threads:
// 62 tok/s; 186-191 on these tiles).
//
// Tiles (8 registers of 16 rows x 64 bytes): 4 accumulators for a 32 x 32 block of y, 2 for 32
// activation rows (16 each) x 32 columns, 2 for 32 weight rows (16 each) x 32 columns.
// Layouts: activations [kpad/32][32 rows][32 columns] bf16, so an A tile is 16 rows of 64 bytes
// at a stride of 64; the weight panel is the AVX-512 bf16 GEMM's [k/2][32 rows][2], which is
// already the B tile's layout (a tile row is one column pair of 16 weight rows): the two B tiles
// start 64 bytes apart at a stride of 128.
//
// Each pool thread loads the tile configuration (amx_tile_config.h) when it starts its share of
// a GEMM and releases the tiles when it ends (GemmKernels::enter / leave): tile state is per
// thread. Whole 32 x 32 blocks of y are loaded into and stored from the accumulator tiles
// directly; with the configuration once per thread, that made the F16 GEMM ~9% faster (medians
// of 9 alternating runs of matmul_bench on the Emerald Rapids above).
//
// Prompts of the packed block types (Q4_0 ... Q8_0, the K-quants, IQ4) run here too (kPacked,
// chosen by packed_prefill_on_amx()), from panels of their packed decode copy
// (panel_pack_packed_avx512.cpp).
#include <immintrin.h>

#include "devices/cpu/matmul/amx_tile_config.h"
#include "devices/cpu/matmul/kernels_avx512.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {
namespace {

constexpr int kMR = 32;         // activation rows per block: two A tiles
constexpr int kNR = 32;         // weight rows per sub-panel: two B tiles (the bf16 panel's NR)
constexpr int kTileCols = 32;   // bf16 columns in one tile row (64 bytes)
constexpr int kTileBytes = 64;  // bytes per tile row

// Rows of x to bf16 (round to nearest even, NaN stays NaN), 32 columns per tile row: block
// [kpad/32][kMR][32]; rows past `rows` and columns past k are zero.
void pack_x(const float* x, int64_t ldx, int rows, int64_t k, int64_t kpad, void* dst) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (int64_t c = 0; c < kpad; c += kTileCols) {
    uint16_t* tile_rows = out + c * kMR;
    for (int i = 0; i < kMR; ++i) {
      __m512i v = _mm512_setzero_si512();
      if (i < rows) {
        const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(k - c), x + i * ldx + c);
        const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(k - c - 16), x + i * ldx + c + 16);
        v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      }
      _mm512_store_si512(tile_rows + i * kTileCols, v);
    }
  }
}

// y[i, 0..31] (+)= the sums of MT x 16 activation rows with the sub-panel's 32 weight rows over
// kc columns. MT = 1 where at most 16 rows are valid (half the products). A whole block (every
// row and column valid) is loaded from and stored to y by the tiles themselves; a partial one goes
// through a buffer and masked stores.
template <int MT>
void micro_tiles(const char* a, const char* b, int64_t kc, float* y, int64_t ldy, int mr_valid, int nr_valid,
                 bool accumulate) {
  const bool whole = mr_valid == 16 * MT && nr_valid == kNR;
  const int64_t y_stride = ldy * int64_t(sizeof(float));
  if (whole && accumulate) {
    _tile_loadd(0, y, y_stride);
    _tile_loadd(1, y + 16, y_stride);
    if constexpr (MT == 2) {
      _tile_loadd(2, y + 16 * ldy, y_stride);
      _tile_loadd(3, y + 16 * ldy + 16, y_stride);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (MT == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  constexpr int64_t kABlock = int64_t(kMR) * kTileBytes;         // one 32-column step of a block
  constexpr int64_t kBBlock = int64_t(kTileCols / 2) * kNR * 4;  // 16 column pairs x 32 rows x 4 bytes
  for (int64_t kb = 0; kb < kc / kTileCols; ++kb) {
    const char* ak = a + kb * kABlock;
    const char* bk = b + kb * kBBlock;
    _tile_loadd(6, bk, 2 * kTileBytes);
    _tile_loadd(7, bk + kTileBytes, 2 * kTileBytes);
    _tile_loadd(4, ak, kTileBytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (MT == 2) {
      _tile_loadd(5, ak + 16 * kTileBytes, kTileBytes);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  if (whole) {
    _tile_stored(0, y, y_stride);
    _tile_stored(1, y + 16, y_stride);
    if constexpr (MT == 2) {
      _tile_stored(2, y + 16 * ldy, y_stride);
      _tile_stored(3, y + 16 * ldy + 16, y_stride);
    }
    return;
  }
  alignas(64) float c[kMR][kNR];
  _tile_stored(0, &c[0][0], kNR * 4);
  _tile_stored(1, &c[0][16], kNR * 4);
  if constexpr (MT == 2) {
    _tile_stored(2, &c[16][0], kNR * 4);
    _tile_stored(3, &c[16][16], kNR * 4);
  }
  const __mmask16 m0 = first_lanes(nr_valid), m1 = first_lanes(nr_valid - 16);
  for (int i = 0; i < mr_valid; ++i)
    store_row(y + i * ldy, _mm512_load_ps(&c[i][0]), _mm512_load_ps(&c[i][16]), m0, m1, accumulate);
}

void micro(int mr_valid, const void* ap, const void* bp, const float*, int64_t kc, float* y, int64_t ldy, int nr_valid,
           bool accumulate) {
  const char* a = static_cast<const char*>(ap);
  const char* b = static_cast<const char*>(bp);
  if (mr_valid <= 16) return micro_tiles<1>(a, b, kc, y, ldy, mr_valid, nr_valid, accumulate);
  micro_tiles<2>(a, b, kc, y, ldy, mr_valid, nr_valid, accumulate);
}

// The tile configuration is per thread: set once when a thread starts its share of a GEMM and
// released when it ends, so the thread carries no 8 KB of tile state (saved and restored at every
// context switch) outside the GEMM.
void configure_tiles() { _tile_loadconfig(&kTileConfig); }
void release_tiles() { _tile_release(); }

// kc = 512 as the AVX-512 plain bf16 GEMM (a 32 KiB sub-panel and a 32 KiB activation slice per
// call; 256 measured 10% slower), nc = 256 (a 256 KiB panel in L2); k_align = 32, one tile row.
constexpr GemmKernels kPlain{kMR, kNR, 512, 256, kTileCols, 2, 2, false, pack_x, avx512::pack_panel_bf16, micro,
                             configure_tiles, release_tiles};
// Packed block types from their packed copy: dequantized values rounded to bf16 in the same panel.
constexpr GemmKernels kPacked{kMR, kNR, 512, 256, kTileCols, 2, 2, false, pack_x, avx512::pack_panel_packed_bf16, micro,
                              configure_tiles, release_tiles};

}  // namespace

const GemmKernels* amx_bf16_gemm(DType t) {
  switch (t) {
    case DType::BF16:
    case DType::F16: return &kPlain;
    default: return nullptr;
  }
}

const GemmKernels* amx_bf16_packed_gemm(DType t) {
  switch (t) {  // every type pack_for_decode packs (panel_pack_packed_avx512.cpp reads each)
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS: return &kPacked;
    default: return nullptr;
  }
}

}  // namespace tandem::cpu::detail
