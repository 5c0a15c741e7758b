// AVX2 + FMA fp32 prefill GEMM (W4A16: weights dequantized to fp32 panels, activations fp32).
//
// Microkernel: 6 activation rows x 16 weight rows = 12 ymm accumulators + 2 weight registers + 1
// broadcast, within the 16 ymm registers; 8 loads per 12 FMAs. Cache blocking as in the AVX-512
// GEMM with a narrower panel: kc = 256, nc = 128 weight rows (128 KiB fp32 panel, 16 KiB
// sub-panel, 6 KiB activation slice).
#include <immintrin.h>

#include <cstring>

#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/simd_avx2.h"

namespace tandem::cpu::detail {

extern const GemvFn kAvx2Gemv[5];

namespace {

constexpr int kMR = 6;
constexpr int kNR = 16;
constexpr int kMaxKc = 256;

// r[c][i] = r[i][c] for 8 rows of 8 columns: the 8 x 8 transpose in registers (unpack pairs, then
// quads, then swap 128-bit halves).
inline void transpose8x8(__m256 (&r)[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      r[i + j] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], 0x44);
      r[i + j + 2] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], 0xEE);
    }
  // r[0..3] hold columns 0, 2, 1, 3 of rows 0-3 (low lane) and 4, 6, 5, 7 (high); r[4..7] rows 4-7.
  constexpr int kColumn[4] = {0, 2, 1, 3};
  for (int i = 0; i < 4; ++i) {
    t[kColumn[i]] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[kColumn[i] + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; ++i) r[i] = t[i];
}

// out[c * ld + i] = r[i][c]: an 8 x 8 block stored transposed.
inline void store_transposed8x8(__m256 (&r)[8], float* out, int64_t ld) {
  transpose8x8(r);
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(out + c * ld, r[c]);
}

// out[c * kMR + i] = row i's column c, zero past `rows` and `k`. Eight columns at a time through
// the 8 x 8 transpose (rows 6 and 7 zero): one value at a time it was 1.9% of a TinyLlama F16
// prompt's samples on Zen 3, now 1.3%. A column's store is eight wide and the next column's overwrites its last two
// values, in order; the eighth column stores exactly six (the block may end there). Masked stores
// (vmaskmovps) cost more than the scalar loop on AMD.
void pack_x(const float* x, int64_t ldx, int rows, int64_t k, int64_t kpad, void* dst) {
  float* out = static_cast<float*>(dst);
  const int64_t vec_end = k / 8 * 8;
  for (int64_t c = 0; c < vec_end; c += 8) {
    __m256 v[8];
    for (int i = 0; i < 8; ++i) v[i] = i < rows ? _mm256_loadu_ps(x + i * ldx + c) : _mm256_setzero_ps();
    transpose8x8(v);  // v[j]: column c + j (six values, then the zero rows 6 and 7)
    float* o = out + c * kMR;
    for (int j = 0; j < 7; ++j) _mm256_storeu_ps(o + j * kMR, v[j]);
    _mm_storeu_ps(o + 7 * kMR, _mm256_castps256_ps128(v[7]));
    _mm_storel_pi(reinterpret_cast<__m64*>(o + 7 * kMR + 4), _mm256_extractf128_ps(v[7], 1));
  }
  for (int64_t c = vec_end; c < kpad; ++c)
    for (int i = 0; i < kMR; ++i) out[c * kMR + i] = (i < rows && c < k) ? x[i * ldx + c] : 0.0f;
}

// Eight consecutive values of a float-typed row (F32, F16, BF16) as fp32; unaligned.
inline __m256 load8_float(DType type, const char* row, int64_t k) {
  if (type == DType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  if (type == DType::F16) return load8_f16(reinterpret_cast<const uint16_t*>(row) + k);
  return load8_bf16(reinterpret_cast<const uint16_t*>(row) + k);
}

// Row columns [k0, k0 + n) as fp32 (block types: k0 and n multiples of 32).
void dequant_row(const WeightView& w, int64_t row, int64_t k0, int64_t n, float* out) {
  if (weight_type_index(w.type) < 0) return dequantize_range(w, row, k0, n, out);  // core's, scalar
  const char* base = static_cast<const char*>(w.data) + size_t(row) * w.row_bytes;
  if (w.type == DType::Q4_0 || w.type == DType::Q8_0) {
    for (int64_t b = 0; b < n / 32; ++b) {
      __m256 v[4];
      float d;
      if (w.type == DType::Q4_0) {
        const BlockQ4_0* blk = reinterpret_cast<const BlockQ4_0*>(base) + k0 / 32 + b;
        q4_levels(blk, v);
        d = fp16_scale(blk->d);
      } else {
        const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(base) + k0 / 32 + b;
        q8_levels(blk, v);
        d = fp16_scale(blk->d);
      }
      for (int j = 0; j < 4; ++j) _mm256_storeu_ps(out + b * 32 + 8 * j, _mm256_mul_ps(v[j], _mm256_set1_ps(d)));
    }
    return;
  }
  const int64_t vec_end = n / 8 * 8;
  for (int64_t j = 0; j < n; ++j) {
    if (j < vec_end) {
      _mm256_storeu_ps(out + j, load8_float(w.type, base, k0 + j));
      j += 7;
      continue;
    }
    const int64_t k = k0 + j;
    // memcpy: a row of a mapped file need not be aligned to its element type.
    if (w.type == DType::F32) {
      std::memcpy(&out[j], base + size_t(k) * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, base + size_t(k) * 2, 2);
      out[j] = w.type == DType::F16 ? fp16_scale(h) : bf16_value(h);
    }
  }
}

// A whole sub-panel of F16, BF16 or F32 weights (16 rows, kc a multiple of 8): each 8 x 8 block
// converted to fp32 in registers and stored transposed, without staging the rows first. Staged,
// the sub-panel was written and read once more: 4.7% of a TinyLlama F16 prompt's samples on Zen 3,
// now 2.4%.
bool pack_float_panel(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, float* out) {
  if (rows != kNR || kc % 8 != 0) return false;
  if (w.type != DType::F16 && w.type != DType::BF16 && w.type != DType::F32) return false;
  for (int g = 0; g < kNR; g += 8) {
    const char* row[8];
    for (int i = 0; i < 8; ++i) row[i] = static_cast<const char*>(w.data) + size_t(r0 + g + i) * w.row_bytes;
    for (int64_t c = 0; c < kc; c += 8) {
      __m256 v[8];
      for (int i = 0; i < 8; ++i) v[i] = load8_float(w.type, row[i], k0 + c);
      store_transposed8x8(v, out + c * kNR + g, kNR);
    }
  }
  return true;
}

void pack_panel(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float*) {
  float* out = static_cast<float*>(panel);
  if (pack_float_panel(w, r0, rows, k0, kc, out)) return;
  alignas(32) float staged[kNR][kMaxKc];
  for (int r = 0; r < kNR; ++r) {
    if (r < rows) dequant_row(w, r0 + r, k0, kc, staged[r]);
    else
      for (int64_t c = 0; c < kc; ++c) staged[r][c] = 0.0f;
  }
  // Transposed 8 x 8 at a time: one element at a time it was 5% of an F16 prompt on Zen 3.
  const int64_t vec_end = kc / 8 * 8;
  for (int64_t c = 0; c < vec_end; c += 8)
    for (int r = 0; r < kNR; r += 8) {
      __m256 v[8];
      for (int i = 0; i < 8; ++i) v[i] = _mm256_load_ps(&staged[r + i][c]);
      store_transposed8x8(v, out + c * kNR + r, kNR);
    }
  for (int64_t c = vec_end; c < kc; ++c)
    for (int r = 0; r < kNR; ++r) out[c * kNR + r] = staged[r][c];
}

inline void store_row(float* y, __m256 c0, __m256 c1, __m256i m0, __m256i m1, bool full, bool accumulate) {
  if (full) {
    if (accumulate) {
      c0 = _mm256_add_ps(c0, _mm256_loadu_ps(y));
      c1 = _mm256_add_ps(c1, _mm256_loadu_ps(y + 8));
    }
    _mm256_storeu_ps(y, c0);
    _mm256_storeu_ps(y + 8, c1);
    return;
  }
  if (accumulate) {
    c0 = _mm256_add_ps(c0, _mm256_maskload_ps(y, m0));
    c1 = _mm256_add_ps(c1, _mm256_maskload_ps(y + 8, m1));
  }
  _mm256_maskstore_ps(y, m0, c0);
  _mm256_maskstore_ps(y + 8, m1, c1);
}

// The loops over a tile's rows are unrolled by pragma, as in gemm_bf16_avx512.cpp: left to GCC
// (12), the accumulator arrays were stored to the stack on every k step, and the store traffic
// held TinyLlama F16 pp512 at 31.7 tok/s on 2 Zen 3 cores (llama.cpp: 84.8).
template <int MV>
void micro_rows(const float* a, const float* b, int64_t kc, float* y, int64_t ldy, int nr_valid, bool accumulate) {
  __m256 c0[MV], c1[MV];
#pragma GCC unroll 8
  for (int i = 0; i < MV; ++i) c0[i] = c1[i] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + k * kNR);
    const __m256 b1 = _mm256_loadu_ps(b + k * kNR + 8);
#pragma GCC unroll 8
    for (int i = 0; i < MV; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + k * kMR + i);
      c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
    }
  }
  const __m256i m0 = first_lanes8(nr_valid), m1 = first_lanes8(nr_valid - 8);
#pragma GCC unroll 8
  for (int i = 0; i < MV; ++i) store_row(y + i * ldy, c0[i], c1[i], m0, m1, nr_valid == kNR, accumulate);
}

void micro(int mr_valid, const void* ap, const void* bp, const float*, int64_t kc, float* y, int64_t ldy,
           int nr_valid, bool accumulate) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  switch (mr_valid) {
    case 1: return micro_rows<1>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 2: return micro_rows<2>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 3: return micro_rows<3>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 4: return micro_rows<4>(a, b, kc, y, ldy, nr_valid, accumulate);
    case 5: return micro_rows<5>(a, b, kc, y, ldy, nr_valid, accumulate);
    default: return micro_rows<6>(a, b, kc, y, ldy, nr_valid, accumulate);
  }
}

constexpr GemmKernels kGemm{kMR, kNR, kMaxKc, 128, 1, 4, 4, false, pack_x, pack_panel, micro};

}  // namespace

const IsaKernels& avx2_kernels() {
  static const IsaKernels k{{kAvx2Gemv[0], kAvx2Gemv[1], kAvx2Gemv[2], kAvx2Gemv[3], kAvx2Gemv[4]},
                            {kGemm, kGemm, kGemm, kGemm, kGemm}};
  return k;
}

}  // namespace tandem::cpu::detail
