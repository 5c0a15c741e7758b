// The weight types' block decoders for the AVX512 kernels (gemv_avx512.cpp, row_sum_avx512.cpp).
// Include only from files compiled with those flags; everything is in an anonymous namespace so
// no copy can be merged into a baseline file.
#pragma once

#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {
namespace {

// Weight formats: levels(row, block) gives the 32 values of a 32-column block as two zmm (before
// the block scale for quantized types); tail() the last partial block of a plain-type row.
// kHalfActivations: decode (m = 1) may multiply the 16-bit weights with scaled fp16 activations
// (WeightView::half_activations, gemv_avx512.cpp).
struct WeightQ4 {
  static constexpr bool kHalfActivations = false;
  static constexpr int64_t kBlockBytes = 18;  // bytes per 32 columns
  static constexpr bool kScaled = true;
  static void levels(const char* row, int64_t b, __m512& lo, __m512& hi) {
    q4_levels(reinterpret_cast<const BlockQ4_0*>(row) + b, lo, hi);
  }
  static float scale(const char* row, int64_t b) { return fp16_scale(reinterpret_cast<const BlockQ4_0*>(row)[b].d); }
  static void tail(const char*, int64_t, int64_t, __m512&, __m512&) {}
};
struct WeightQ8 {
  static constexpr bool kHalfActivations = false;
  static constexpr int64_t kBlockBytes = 34;  // bytes per 32 columns
  static constexpr bool kScaled = true;
  static void levels(const char* row, int64_t b, __m512& lo, __m512& hi) {
    q8_levels(reinterpret_cast<const BlockQ8_0*>(row) + b, lo, hi);
  }
  static float scale(const char* row, int64_t b) { return fp16_scale(reinterpret_cast<const BlockQ8_0*>(row)[b].d); }
  static void tail(const char*, int64_t, int64_t, __m512&, __m512&) {}
};
struct WeightF32 {
  static constexpr bool kHalfActivations = false;
  static constexpr int64_t kBlockBytes = 128;  // bytes per 32 columns
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, __m512& lo, __m512& hi) {
    const float* p = reinterpret_cast<const float*>(row) + b * 32;
    lo = _mm512_loadu_ps(p);
    hi = _mm512_loadu_ps(p + 16);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static void tail(const char* row, int64_t k0, int64_t n, __m512& lo, __m512& hi) {
    const float* p = reinterpret_cast<const float*>(row) + k0;
    lo = load_f32(p, first_lanes(n));
    hi = load_f32(p + 16, first_lanes(n - 16));
  }
};
struct WeightF16 {
  static constexpr bool kHalfActivations = true;
  static constexpr int64_t kBlockBytes = 64;  // bytes per 32 columns
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, __m512& lo, __m512& hi) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + b * 32;
    lo = load_f16(p);
    hi = load_f16(p + 16);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static void tail(const char* row, int64_t k0, int64_t n, __m512& lo, __m512& hi) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k0;
    lo = load_f16(p, first_lanes(n));
    hi = load_f16(p + 16, first_lanes(n - 16));
  }
};
struct WeightBF16 {
  static constexpr bool kHalfActivations = true;
  static constexpr int64_t kBlockBytes = 64;  // bytes per 32 columns
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, __m512& lo, __m512& hi) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + b * 32;
    lo = load_bf16(p);
    hi = load_bf16(p + 16);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static void tail(const char* row, int64_t k0, int64_t n, __m512& lo, __m512& hi) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k0;
    lo = load_bf16(p, first_lanes(n));
    hi = load_bf16(p + 16, first_lanes(n - 16));
  }
};

}  // namespace
}  // namespace tandem::cpu::detail
