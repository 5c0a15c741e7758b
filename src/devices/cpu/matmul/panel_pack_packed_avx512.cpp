// bf16 weight panels of block-quantized matrices read from their packed copy (packed_weight.h),
// for the AMX GEMM: each value is its dequantized weight (as ggml's dequantization forms it, in
// fp32), rounded once to bf16. Every packed type: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL and the
// super-block types Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS.
//
// Why the packed copy and not the file's rows: the cpu device keeps the packed copy for decode,
// and the file's bytes are no longer resident after packing (reading them again would fault
// them back in and add their size to the resident set). The packed layout also suits this job:
// one zmm holds a dword of 16 rows, so two columns of 16 rows come out of it as one 64-byte row
// of the panel with no transpose.
//
// How: a 32-column block of a 16-row group is unpacked to eight zmm of unsigned codes u exactly as
// the int8 decode kernels unpack it (int8_blocks_avx512.h), and every type's value is affine in
// its code per 16-column half: value = a u + c, with a and c per row (Q4_K: a = d sc, c = -dmin m;
// Q6_K: a = d sc, c = -32 a; Q8_0: a = d, c = -128 d as its codes are value + 128; ...).
//
// Why scale before rounding: the AMX tile product has no per-block scale, so the scale goes into
// the weight. The codes are exact and a u + c is one fp32 FMA; the value is then rounded to bf16
// (relative error at most 2^-9), the same rounding the bf16 GEMM applies to F16 weights.
#include "devices/cpu/matmul/int8_blocks_avx512.h"
#include "devices/cpu/matmul/kernels_avx512.h"

namespace tandem::cpu::detail::avx512 {
namespace {

using int8::fp16x16;
using int8::s8x16;
using int8::u8x16;

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

// One 32-column block of a group: the codes (v[j]: dword j of each row, elements 4j..4j+3 for
// j < 4 and 16 + 4(j - 4).. for j >= 4, as the int8 kernels' unpackers give them) and the affine
// map of each 16-column half (a[0], c[0]: elements 0..15; a[1], c[1]: 16..31).
struct Block {
  __m512i v[8];
  __m512 a[2], c[2];
};

inline void unpack_four_bits(const __m512i* qs, __m512i (&v)[8]) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0F);
  for (int j = 0; j < 4; ++j) {
    const __m512i w = _mm512_load_si512(qs + j);
    v[j] = _mm512_and_si512(w, lo_mask);
    v[4 + j] = _mm512_and_si512(_mm512_srli_epi16(w, 4), lo_mask);
  }
}

inline __m512 negated(__m512 x) { return _mm512_sub_ps(_mm512_setzero_ps(), x); }

// The same map for both halves.
inline void one_map(Block& k, __m512 a, __m512 c) {
  k.a[0] = k.a[1] = a;
  k.c[0] = k.c[1] = c;
}

// The types with one fp16 scale per 32 columns (blocks32): value = d (u - kOffset), or d u + m.
template <int kOffset, bool kMinimum>
inline void blocks32_map(const uint8_t* meta, Block& k) {
  const __m512 d = fp16x16(meta);
  one_map(k, d, kMinimum ? fp16x16(meta + 32) : _mm512_mul_ps(d, _mm512_set1_ps(-float(kOffset))));
}

// Block b of group g of `p`, by type. `sb` is b's super-block; `supers` the row's super-blocks.
struct BlockReader {
  const PackedWeight& p;
  const __m512i* qs;
  const uint8_t* meta;
  const uint16_t* super;
  int64_t supers;
  __m512i iq4_levels;

  BlockReader(const PackedWeight& w, int64_t g)
      : p(w),
        qs(reinterpret_cast<const __m512i*>(w.qs(g))),
        meta(w.block_meta(g)),
        super(w.super_meta(g)),
        supers(w.blocks / 8),
        iq4_levels(int8::iq4_levels_plus_128()) {}

  void read(int64_t b, Block& k) const {
    const __m512i* q = qs + size_t(b) * p.qs_bytes_per_block / 64;
    const uint8_t* m = meta + size_t(b) * p.meta_bytes_per_block;
    const int64_t sb = b / 8;
    switch (p.type) {
      case DType::Q4_0: unpack_four_bits(q, k.v); return blocks32_map<8, false>(m, k);
      case DType::Q4_1: unpack_four_bits(q, k.v); return blocks32_map<0, true>(m, k);
      case DType::Q5_0: int8::unpack_five_bits(q, k.v); return blocks32_map<16, false>(m, k);
      case DType::Q5_1: int8::unpack_five_bits(q, k.v); return blocks32_map<0, true>(m, k);
      case DType::IQ4_NL: int8::unpack_levels(q, iq4_levels, k.v); return blocks32_map<128, false>(m, k);
      case DType::Q8_0:
        for (int j = 0; j < 8; ++j) k.v[j] = _mm512_load_si512(q + j);  // value + 128
        return blocks32_map<128, false>(m, k);
      case DType::Q2_K: {  // per half: d sc u - dmin min
        int8::unpack_two_bits(q, k.v);
        const __m512 d = fp16x16(super + sb * 16), dmin = fp16x16(super + (supers + sb) * 16);
        for (int h = 0; h < 2; ++h) {
          k.a[h] = _mm512_mul_ps(d, u8x16(m + 16 * h));
          k.c[h] = negated(_mm512_mul_ps(dmin, u8x16(m + 32 + 16 * h)));
        }
        return;
      }
      case DType::Q3_K:
      case DType::Q6_K: {  // per half: d sc (u - offset)
        const bool three = p.type == DType::Q3_K;
        if (three) {
          int8::unpack_three_bits(q, k.v);
        } else {
          int8::unpack_six_bits(q, k.v);
        }
        const __m512 d = fp16x16(super + sb * 16), offset = _mm512_set1_ps(three ? -4.0f : -32.0f);
        for (int h = 0; h < 2; ++h) {
          k.a[h] = _mm512_mul_ps(d, s8x16(m + 16 * h));
          k.c[h] = _mm512_mul_ps(k.a[h], offset);
        }
        return;
      }
      case DType::Q4_K:
      case DType::Q5_K: {  // d sc u - dmin min
        if (p.type == DType::Q4_K) {
          unpack_four_bits(q, k.v);
        } else {
          int8::unpack_five_bits(q, k.v);
        }
        const __m512 d = fp16x16(super + sb * 16), dmin = fp16x16(super + (supers + sb) * 16);
        return one_map(k, _mm512_mul_ps(d, u8x16(m)), negated(_mm512_mul_ps(dmin, u8x16(m + 16))));
      }
      case DType::IQ4_XS: {  // d sc (u - 128), u the IQ4 level + 128
        int8::unpack_levels(q, iq4_levels, k.v);
        const __m512 a = _mm512_mul_ps(fp16x16(super + sb * 16), s8x16(m));
        return one_map(k, a, _mm512_mul_ps(a, _mm512_set1_ps(-128.0f)));
      }
      default: __builtin_unreachable();  // amx_bf16_packed_gemm() admits only the types above
    }
  }
};

// Byte t (0..3) of every dword of v, as fp32.
inline __m512 code(__m512i v, int t) {
  return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(v, 8 * t), _mm512_set1_epi32(0xFF)));
}

// Columns (e, e + 1) of 16 rows, a u + c each, as one panel row of 16 bf16 pairs.
inline void store_pair(__m512 even, __m512 odd, __m512 a, __m512 c, __m512i index, uint32_t* dst) {
  const __m512 e = _mm512_fmadd_ps(even, a, c), o = _mm512_fmadd_ps(odd, a, c);
  _mm512_store_si512(dst, _mm512_permutexvar_epi16(index, (__m512i)_mm512_cvtne2ps_pbh(o, e)));
}

// Blocks [b0, b1) of one packed group into the panel's 16 rows starting at `dst` (a dword stride
// of kPairDwords per column pair). Rows outside `lanes` get a = c = 0, hence zeros.
void group_to_panel(const PackedWeight& p, int64_t g, int64_t b0, int64_t b1, __mmask16 lanes, uint32_t* dst) {
  const __m512i index = interleave_index();
  const BlockReader reader(p, g);
  for (int64_t b = b0; b < b1; ++b) {
    Block k;
    reader.read(b, k);
    uint32_t* out = dst + (b - b0) * kBlockPairs * kPairDwords;
    for (int h = 0; h < 2; ++h) {
      const __m512 a = _mm512_maskz_mov_ps(lanes, k.a[h]), c = _mm512_maskz_mov_ps(lanes, k.c[h]);
      for (int j = 0; j < 4; ++j) {
        // Dword j of half h: elements 16h + 4j .. +3, column pairs 8h + 2j and 8h + 2j + 1.
        const __m512i v = k.v[4 * h + j];
        uint32_t* pair = out + (8 * h + 2 * j) * kPairDwords;
        store_pair(code(v, 0), code(v, 1), a, c, index, pair);
        store_pair(code(v, 2), code(v, 3), a, c, index, pair + kPairDwords);
      }
    }
  }
}

}  // namespace

void pack_panel_packed_bf16(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float*) {
  const PackedWeight& p = *w.packed;
  const int64_t g0 = (w.packed_row0 + r0) / kGroupRows;  // r0 is a multiple of kNR, packed_row0 of 16
  const int64_t b0 = k0 / 32, b1 = (k0 + kc) / 32;       // packed rows are whole 32-column blocks
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
