// Weight panels for the AVX-512 GEMMs: 32 weight rows x kc columns, dequantized and transposed to
// k-major order so the microkernel loads the 32 rows' values of one column (or column pair) as two
// zmm. A panel is reused by every activation block of the call, so its cost (decode, then a
// 16x16 register transpose) is paid once per m activation rows.
#include "devices/cpu/matmul/kernels_avx512.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail::avx512 {
namespace {

constexpr int kNR = 32;
constexpr int kMaxKc = 256;      // row-major staging width of fp32 panels (their GEMM uses kc = 256)
constexpr int kMaxKcBf16 = 512;  // and of bf16 ones (kc = 256 block-scaled, 512 plain)

const char* weight_row(const WeightView& w, int64_t row) {
  return static_cast<const char*>(w.data) + size_t(row) * w.row_bytes;
}

// Row columns [k0, k0 + n) as fp32 (block types: k0, n multiples of 32). Writes whole 16-lane
// vectors; lanes past n are zero.
void dequant_f32(const WeightView& w, int64_t row, int64_t k0, int64_t n, float* out) {
  const char* base = weight_row(w, row);
  switch (w.type) {
    case DType::Q4_0:
    case DType::Q8_0:
      for (int64_t b = 0; b < n / 32; ++b) {
        __m512 lo, hi;
        float d;
        if (w.type == DType::Q4_0) {
          const BlockQ4_0* blk = reinterpret_cast<const BlockQ4_0*>(base) + k0 / 32 + b;
          q4_levels(blk, lo, hi);
          d = fp16_scale(blk->d);
        } else {
          const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(base) + k0 / 32 + b;
          q8_levels(blk, lo, hi);
          d = fp16_scale(blk->d);
        }
        const __m512 vd = _mm512_set1_ps(d);
        _mm512_store_ps(out + b * 32, _mm512_mul_ps(lo, vd));
        _mm512_store_ps(out + b * 32 + 16, _mm512_mul_ps(hi, vd));
      }
      return;
    case DType::F32:
      for (int64_t j = 0; j < n; j += 16)
        _mm512_store_ps(out + j, load_f32(reinterpret_cast<const float*>(base) + k0 + j, first_lanes(n - j)));
      return;
    case DType::F16:
      for (int64_t j = 0; j < n; j += 16)
        _mm512_store_ps(out + j, load_f16(reinterpret_cast<const uint16_t*>(base) + k0 + j, first_lanes(n - j)));
      return;
    case DType::BF16:
      for (int64_t j = 0; j < n; j += 16)
        _mm512_store_ps(out + j, load_bf16(reinterpret_cast<const uint16_t*>(base) + k0 + j, first_lanes(n - j)));
      return;
    default: dequantize_range(w, row, k0, n, out); return;  // no decoder here: core's, scalar
  }
}

// Row columns [k0, k0 + n) as bf16 (n even; columns past the row's end zero). Q4_0/Q8_0 give
// their integer levels (exact in bf16) and store the block scales to scales[(k/32) * 32]; F16
// values are rounded to bf16.
void dequant_bf16(const WeightView& w, int64_t row, int64_t k0, int64_t n, uint16_t* out, float* scales) {
  const char* base = weight_row(w, row);
  if (w.type == DType::BF16) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(base) + k0;
    const int64_t valid = w.cols - k0;
    for (int64_t j = 0; j < n; j += 32) {
      const int64_t left = valid - j;
      const __mmask32 mask = left >= 32 ? ~__mmask32(0) : left <= 0 ? 0 : __mmask32((1u << left) - 1);
      _mm512_store_si512(out + j, _mm512_maskz_loadu_epi16(mask, p + j));
    }
    return;
  }
  if (w.type == DType::F16) {  // rounded to bf16 (see gemm_bf16_avx512.cpp)
    const uint16_t* p = reinterpret_cast<const uint16_t*>(base) + k0;
    const int64_t valid = w.cols - k0;
    for (int64_t j = 0; j < n; j += 32) {
      const __m512 lo = load_f16(p + j, first_lanes(valid - j));
      const __m512 hi = load_f16(p + j + 16, first_lanes(valid - j - 16));
      _mm512_store_si512(out + j, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    return;
  }
  for (int64_t b = 0; b < n / 32; ++b) {
    __m512 lo, hi;
    if (w.type == DType::Q4_0) {
      const BlockQ4_0* blk = reinterpret_cast<const BlockQ4_0*>(base) + k0 / 32 + b;
      q4_levels(blk, lo, hi);
      scales[b * kNR] = fp16_scale(blk->d);
    } else {
      const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(base) + k0 / 32 + b;
      q8_levels(blk, lo, hi);
      scales[b * kNR] = fp16_scale(blk->d);
    }
    const __m512i packed = _mm512_inserti64x4(_mm512_castsi256_si512((__m256i)_mm512_cvtneps_pbh(lo)),
                                              (__m256i)_mm512_cvtneps_pbh(hi), 1);
    _mm512_store_si512(out + b * 32, packed);
  }
}

// dst[c * 32 + r] = src[r * stride + c] for 32 rows and n columns of 32-bit values.
void transpose_to_panel(const float* src, int64_t stride, int64_t n, float* dst) {
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    for (int rb = 0; rb < kNR; rb += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_load_ps(src + (rb + i) * stride + c);
      transpose16(r);
      for (int i = 0; i < 16; ++i) _mm512_store_ps(dst + (c + i) * kNR + rb, r[i]);
    }
  }
  for (; c < n; ++c)
    for (int r = 0; r < kNR; ++r) dst[c * kNR + r] = src[r * stride + c];
}

}  // namespace

void pack_panel_f32(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float*) {
  alignas(64) float staged[kNR][kMaxKc];
  for (int r = 0; r < kNR; ++r) {
    if (r < rows) {
      dequant_f32(w, r0 + r, k0, kc, staged[r]);
    } else {
      for (int64_t j = 0; j < kc; j += 16) _mm512_store_ps(staged[r] + j, _mm512_setzero_ps());
    }
  }
  transpose_to_panel(&staged[0][0], kMaxKc, kc, static_cast<float*>(panel));
}

void pack_panel_bf16(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float* scales) {
  alignas(64) uint16_t staged[kNR][kMaxKcBf16];
  for (int r = 0; r < kNR; ++r) {
    if (r < rows) {
      dequant_bf16(w, r0 + r, k0, kc, staged[r], scales ? scales + r : nullptr);
    } else {
      for (int64_t j = 0; j < kc; j += 32) _mm512_store_si512(staged[r] + j, _mm512_setzero_si512());
      if (scales)
        for (int64_t b = 0; b < kc / 32; ++b) scales[b * kNR + r] = 0.0f;
    }
  }
  // A bf16 pair is one 32-bit unit, so the fp32 transpose moves pairs.
  transpose_to_panel(reinterpret_cast<const float*>(&staged[0][0]), kMaxKcBf16 / 2, kc / 2, static_cast<float*>(panel));
}

}  // namespace tandem::cpu::detail::avx512
