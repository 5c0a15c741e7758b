// bf16 weight panels of Q4_0 / Q8_0 matrices read from their packed copy (packed_weight.h), for
// the AMX GEMM: each value is its level times its block scale, rounded once to bf16.
//
// Why the packed copy and not the file's rows: the cpu device keeps the packed copy for decode,
// and the file's bytes are no longer resident after packing (reading them again would fault
// them back in and add their size to the resident set). The packed layout also suits this job:
// one zmm holds a dword of 16 rows, so two columns of 16 rows come out of it as one 64-byte row
// of the panel with no transpose.
//
// Why scale before rounding: the AMX tile product has no per-32-column scale, so the scale goes
// into the weight. The levels are exact; the product is rounded to bf16 (relative error at most
// 2^-9), the same rounding the bf16 GEMM applies to F16 weights.
#include "devices/cpu/matmul/kernels_avx512.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail::avx512 {
namespace {

constexpr int kNR = 32;                  // panel rows: two packed groups
constexpr int kGroupRows = 16;           // PackedWeight::kRows
constexpr int64_t kPairDwords = kNR;     // one column pair of the panel: 32 rows' bf16 pairs
constexpr int64_t kBlockPairs = 32 / 2;  // column pairs per 32-column block

// vpermw indices: word 2r of the result is word r of vcvtne2ps2bf16(odd, even) (row r's even
// column) and word 2r + 1 is word 16 + r (its odd column), so each dword is one row's bf16 pair.
inline __m512i interleave_index() {
  alignas(64) static constexpr uint16_t kIndex[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_load_si512(kIndex);
}

// The pair (even, odd) of integer levels of 16 rows, times the rows' scales, as 16 bf16 pairs.
inline void store_pair(__m512i even, __m512i odd, __m512 scale, __m512i index, uint32_t* dst) {
  const __m512 e = _mm512_mul_ps(_mm512_cvtepi32_ps(even), scale);
  const __m512 o = _mm512_mul_ps(_mm512_cvtepi32_ps(odd), scale);
  _mm512_store_si512(dst, _mm512_permutexvar_epi16(index, (__m512i)_mm512_cvtne2ps_pbh(o, e)));
}

// Byte t (0..3) of every dword of `s`, sign-extended: the level, where s holds Q8_0's stored bytes
// (value + 128) XOR 0x80.
inline __m512i q8_level(__m512i s, int t) { return _mm512_srai_epi32(_mm512_slli_epi32(s, 24 - 8 * t), 24); }

// The four bits at `shift` of every dword, as the level (value - 8).
inline __m512i q4_level(__m512i v, int shift) {
  return _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(v, shift), _mm512_set1_epi32(0xF)), _mm512_set1_epi32(8));
}

// Blocks [b0, b1) of one packed group into the panel's 16 rows starting at `dst` (a dword stride
// of kPairDwords per column pair). Rows outside `lanes` get zero scales, hence zeros.
void group_to_panel(const PackedWeight& p, int64_t g, int64_t b0, int64_t b1, __mmask16 lanes, uint32_t* dst) {
  const __m512i index = interleave_index();
  const uint8_t* qs = p.qs(g);
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(p.block_meta(g));
  for (int64_t b = b0; b < b1; ++b) {
    const __m512 d =
        _mm512_maskz_cvtph_ps(lanes, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * kGroupRows)));
    const __m512i* q = reinterpret_cast<const __m512i*>(qs + size_t(b) * p.qs_bytes_per_block);
    uint32_t* out = dst + (b - b0) * kBlockPairs * kPairDwords;
    if (p.type == DType::Q4_0) {
      // Dword j of a row: its bytes 4j..4j+3, whose low nibbles are elements 4j..4j+3 and whose
      // high nibbles are elements 16+4j..16+4j+3.
      for (int j = 0; j < 4; ++j) {
        const __m512i v = _mm512_load_si512(q + j);
        store_pair(q4_level(v, 0), q4_level(v, 8), d, index, out + (2 * j) * kPairDwords);
        store_pair(q4_level(v, 16), q4_level(v, 24), d, index, out + (2 * j + 1) * kPairDwords);
        store_pair(q4_level(v, 4), q4_level(v, 12), d, index, out + (8 + 2 * j) * kPairDwords);
        store_pair(q4_level(v, 20), q4_level(v, 28), d, index, out + (8 + 2 * j + 1) * kPairDwords);
      }
    } else {  // Q8_0: dword j holds elements 4j..4j+3
      for (int j = 0; j < 8; ++j) {
        const __m512i v = _mm512_xor_si512(_mm512_load_si512(q + j), _mm512_set1_epi32(int(0x80808080u)));
        store_pair(q8_level(v, 0), q8_level(v, 1), d, index, out + (2 * j) * kPairDwords);
        store_pair(q8_level(v, 2), q8_level(v, 3), d, index, out + (2 * j + 1) * kPairDwords);
      }
    }
  }
}

}  // namespace

void pack_panel_packed_bf16(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float*) {
  const PackedWeight& p = *w.packed;
  const int64_t g0 = (w.packed_row0 + r0) / kGroupRows;  // r0 is a multiple of kNR, packed_row0 of 16
  const int64_t b0 = k0 / 32, b1 = (k0 + kc) / 32;       // Q4_0 / Q8_0 rows are whole blocks
  uint32_t* out = static_cast<uint32_t*>(panel);
  for (int half = 0; half < 2; ++half) {
    const int valid = rows - half * kGroupRows;
    uint32_t* dst = out + half * kGroupRows;
    if (valid > 0) {
      group_to_panel(p, g0 + half, b0, b1, first_lanes(valid), dst);
    } else {
      for (int64_t c = 0; c < kc / 2; ++c) _mm512_store_si512(dst + c * kPairDwords, _mm512_setzero_si512());
    }
  }
}

}  // namespace tandem::cpu::detail::avx512
