// AVX512-BF16 prefill GEMM: activations rounded to bf16, fp32 accumulation.
//
// vdpbf16ps multiplies 32 bf16 pairs into 16 fp32 lanes per instruction, twice the MACs of an fp32
// FMA. Exactness of the weights: Q4_0 levels (-8..7) and Q8_0 levels (-128..127) are small
// integers, exact in bf16's 8-bit significand, and bf16 weights are copied, so for those types the
// only rounding besides fp32 accumulation is x -> bf16 (relative 2^-9). The fp16 block scale of
// Q4_0/Q8_0 is not folded into the bf16 values (that would round the weight); each 32-column block
// is summed in unscaled levels and then scaled in fp32: acc += sum_block * d.
//
// F16 weights are rounded to bf16 as well (relative 2^-9 each, the same as the activations): an
// fp32 GEMM on fp16 weights runs at half the MACs, which left F16 prompts no faster than
// llama.cpp's. Each product is then off by at most ~2^-8 relative, inside the 1e-2 |x||w| bound of
// the bf16 path; TANDEM_MATMUL_PRECISION=fp32 keeps every weight exact (the oracle).
//
// Layouts (k pairs interleaved so each dword lane holds one row's two consecutive columns):
// activations [k/2][MR][2] (a pair is broadcast as one dword), panel [k/2][32][2] (two zmm per
// pair = 32 weight rows).
//
// Tiles: block-scaled types keep 6 x 32 totals plus 6 x 32 per-block sums (24 zmm) + 2 weight
// + 2 scale registers; bf16 weights need no per-block sums, so 12 x 32 (24 zmm) as in fp32.
#include "devices/cpu/matmul/kernels_avx512.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {
namespace {

constexpr int kNR = 32;
constexpr int kMRScaled = 6;
constexpr int kMRPlain = 12;

// Rows of x to bf16 (round to nearest even, NaN stays NaN), pairs interleaved by row: each 32
// columns of the MR rows become 16 x MR dwords, one register transpose (rows past `rows` and the
// transpose's spare lanes zero) and 16 masked stores -- not 16 x MR scalar ones, which cost a
// prompt GEMM 3% at 2048 columns.
template <int MR>
void pack_x(const float* x, int64_t ldx, int rows, int64_t k, int64_t kpad, void* dst) {
  static_assert(MR <= 16, "one transposed register holds 16 rows");
  uint32_t* out = static_cast<uint32_t*>(dst);
  const __mmask16 row_lanes = first_lanes(MR);
  for (int64_t c = 0; c < kpad; c += 32) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) {
      if (i < rows && i < MR) {
        const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(k - c), x + i * ldx + c);
        const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(k - c - 16), x + i * ldx + c + 16);
        r[i] = _mm512_castsi512_ps((__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      } else {
        r[i] = _mm512_setzero_ps();
      }
    }
    transpose16(r);  // r[j] lane i: row i's pair j
    const int64_t n = (kpad - c) / 2 < 16 ? (kpad - c) / 2 : 16;
    for (int64_t j = 0; j < n; ++j) _mm512_mask_storeu_ps(out + (c / 2 + j) * MR, row_lanes, r[j]);
  }
}

// acc + the 16 lanes' dot products of b's bf16 pairs with the one pair at a_pair. vdpbf16ps
// takes the pair as an embedded broadcast ({1to16}); GCC 12 emits a separate vpbroadcastd for
// _mm512_set1_epi32(load) -- 12 more instructions per 24 dot products -- so for GCC it is spelled
// out (as dot_bcast in int8_blocks_avx512.h).
inline __m512 dot_pair(__m512 acc, const uint32_t* a_pair, __m512i b) {
#if defined(__GNUC__) && !defined(__clang__)
  __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(b), "m"(*a_pair));
  return acc;
#else
  return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi32(int(*a_pair)), (__m512bh)b);
#endif
}

// The loops over a tile's rows are unrolled by pragma: GCC otherwise unrolls them after its
// scalar replacement of the accumulator arrays, and with dot_pair's asm the arrays then stayed in
// memory, all 24 stored on every k step (the plain GEMM ran at half speed).
template <int MV>
void micro_scaled_rows(const uint32_t* a, const uint16_t* b, const float* scales, int64_t kc, float* y, int64_t ldy,
                       int nr_valid, bool accumulate) {
  prefetch_tile<MV>(y, ldy);
  __m512 c0[MV], c1[MV];
#pragma GCC unroll 16
  for (int i = 0; i < MV; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t blk = 0; blk < kc / 32; ++blk) {
    __m512 t0[MV], t1[MV];
#pragma GCC unroll 16
    for (int i = 0; i < MV; ++i) t0[i] = t1[i] = _mm512_setzero_ps();
    for (int p = 0; p < 16; ++p) {
      const int64_t kp = blk * 16 + p;
      const __m512i b0 = _mm512_load_si512(b + kp * 2 * kNR);
      const __m512i b1 = _mm512_load_si512(b + kp * 2 * kNR + 32);
#pragma GCC unroll 16
      for (int i = 0; i < MV; ++i) {
        t0[i] = dot_pair(t0[i], a + kp * kMRScaled + i, b0);
        t1[i] = dot_pair(t1[i], a + kp * kMRScaled + i, b1);
      }
    }
    const __m512 s0 = _mm512_load_ps(scales + blk * kNR);
    const __m512 s1 = _mm512_load_ps(scales + blk * kNR + 16);
#pragma GCC unroll 16
    for (int i = 0; i < MV; ++i) {
      c0[i] = _mm512_fmadd_ps(t0[i], s0, c0[i]);
      c1[i] = _mm512_fmadd_ps(t1[i], s1, c1[i]);
    }
  }
  const __mmask16 m0 = first_lanes(nr_valid), m1 = first_lanes(nr_valid - 16);
#pragma GCC unroll 16
  for (int i = 0; i < MV; ++i) store_row(y + i * ldy, c0[i], c1[i], m0, m1, accumulate);
}

template <int MV>
void micro_plain_rows(const uint32_t* a, const uint16_t* b, int64_t kc, float* y, int64_t ldy, int nr_valid,
                      bool accumulate) {
  prefetch_tile<MV>(y, ldy);
  __m512 c0[MV], c1[MV];
#pragma GCC unroll 16
  for (int i = 0; i < MV; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t kp = 0; kp < kc / 2; ++kp) {
    const __m512i b0 = _mm512_load_si512(b + kp * 2 * kNR);
    const __m512i b1 = _mm512_load_si512(b + kp * 2 * kNR + 32);
#pragma GCC unroll 16
    for (int i = 0; i < MV; ++i) {
      c0[i] = dot_pair(c0[i], a + kp * kMRPlain + i, b0);
      c1[i] = dot_pair(c1[i], a + kp * kMRPlain + i, b1);
    }
  }
  const __mmask16 m0 = first_lanes(nr_valid), m1 = first_lanes(nr_valid - 16);
#pragma GCC unroll 16
  for (int i = 0; i < MV; ++i) store_row(y + i * ldy, c0[i], c1[i], m0, m1, accumulate);
}

void micro_scaled(int mr_valid, const void* ap, const void* bp, const float* scales, int64_t kc, float* y,
                  int64_t ldy, int nr_valid, bool accumulate) {
  const uint32_t* a = static_cast<const uint32_t*>(ap);
  const uint16_t* b = static_cast<const uint16_t*>(bp);
  switch (mr_valid) {
    case 1: return micro_scaled_rows<1>(a, b, scales, kc, y, ldy, nr_valid, accumulate);
    case 2: return micro_scaled_rows<2>(a, b, scales, kc, y, ldy, nr_valid, accumulate);
    case 3: return micro_scaled_rows<3>(a, b, scales, kc, y, ldy, nr_valid, accumulate);
    case 4: return micro_scaled_rows<4>(a, b, scales, kc, y, ldy, nr_valid, accumulate);
    case 5: return micro_scaled_rows<5>(a, b, scales, kc, y, ldy, nr_valid, accumulate);
    default: return micro_scaled_rows<6>(a, b, scales, kc, y, ldy, nr_valid, accumulate);
  }
}

void micro_plain(int mr_valid, const void* ap, const void* bp, const float*, int64_t kc, float* y, int64_t ldy,
                 int nr_valid, bool accumulate) {
  const uint32_t* a = static_cast<const uint32_t*>(ap);
  const uint16_t* b = static_cast<const uint16_t*>(bp);
  switch (mr_valid) {
    case 1: return micro_plain_rows<1>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 2: return micro_plain_rows<2>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 3: return micro_plain_rows<3>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 4: return micro_plain_rows<4>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 5: return micro_plain_rows<5>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 6: return micro_plain_rows<6>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 7: return micro_plain_rows<7>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 8: return micro_plain_rows<8>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 9: return micro_plain_rows<9>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 10: return micro_plain_rows<10>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 11: return micro_plain_rows<11>(a, b, kc, y, ldy, nr_valid, accumulate);
    default: return micro_plain_rows<12>(a, b, kc, y, ldy, nr_valid, accumulate);
  }
}

// Block-scaled: kc = 256 (a multiple of the 32-column quant block), nc = 256: a 128 KiB bf16
// panel. Plain: kc = 512 (a 256 KiB panel, still a quarter of a Zen 4/5 L2; the activation slice
// 12 KiB of L1), so y is read and written half as often: a BF16 prompt GEMM ran 8% faster than at
// 256 (Zen 5, gate/up at m = 512, 1 thread).
constexpr GemmKernels kScaled{kMRScaled, kNR, 256, 256, 2, 2, 2, true, pack_x<kMRScaled>, avx512::pack_panel_bf16,
                              micro_scaled};
constexpr GemmKernels kPlain{kMRPlain, kNR, 512, 256, 2, 2, 2, false, pack_x<kMRPlain>, avx512::pack_panel_bf16,
                             micro_plain};

}  // namespace

const GemmKernels* avx512_bf16_gemm(DType t) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q8_0: return &kScaled;
    case DType::BF16:
    case DType::F16: return &kPlain;
    default: return nullptr;
  }
}

}  // namespace tandem::cpu::detail
