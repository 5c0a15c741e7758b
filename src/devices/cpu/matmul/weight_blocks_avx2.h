// The weight types' block decoders for the AVX2 kernels (gemv_avx2.cpp, row_sum_avx2.cpp).
// Include only from files compiled with those flags; everything is in an anonymous namespace so
// no copy can be merged into a baseline file.
#pragma once

#include <cstring>

#include "devices/cpu/matmul/simd_avx2.h"

namespace tandem::cpu::detail {
namespace {

// Element k of a row that need not be aligned to T (a view may start anywhere in a mapped file).
template <class T>
T load_unaligned(const char* row, int64_t k) {
  T v;
  std::memcpy(&v, row + size_t(k) * sizeof(T), sizeof(T));
  return v;
}

// levels(row, block, v): the 32 values of a 32-column block (unscaled levels for quantized types).
// tail_value(row, k): one element of a plain-type row, for a partial last block.
struct WeightQ4 {
  static constexpr int64_t kBlockBytes = 18;  // bytes of one 32-column block
  static constexpr bool kScaled = true;
  static void levels(const char* row, int64_t b, __m256 v[4]) { q4_levels(reinterpret_cast<const BlockQ4_0*>(row) + b, v); }
  static float scale(const char* row, int64_t b) { return fp16_scale(reinterpret_cast<const BlockQ4_0*>(row)[b].d); }
  static float tail_value(const char*, int64_t) { return 0.0f; }
};
struct WeightQ8 {
  static constexpr int64_t kBlockBytes = 34;  // bytes of one 32-column block
  static constexpr bool kScaled = true;
  static void levels(const char* row, int64_t b, __m256 v[4]) { q8_levels(reinterpret_cast<const BlockQ8_0*>(row) + b, v); }
  static float scale(const char* row, int64_t b) { return fp16_scale(reinterpret_cast<const BlockQ8_0*>(row)[b].d); }
  static float tail_value(const char*, int64_t) { return 0.0f; }
};
struct WeightF32 {
  static constexpr int64_t kBlockBytes = 128;  // bytes of one 32-column block
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, __m256 v[4]) {
    for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(reinterpret_cast<const float*>(row) + b * 32 + 8 * j);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static float tail_value(const char* row, int64_t k) { return load_unaligned<float>(row, k); }
};
struct WeightF16 {
  static constexpr int64_t kBlockBytes = 64;  // bytes of one 32-column block
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, __m256 v[4]) {
    for (int j = 0; j < 4; ++j) v[j] = load8_f16(reinterpret_cast<const uint16_t*>(row) + b * 32 + 8 * j);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static float tail_value(const char* row, int64_t k) { return fp16_scale(load_unaligned<uint16_t>(row, k)); }
};
struct WeightBF16 {
  static constexpr int64_t kBlockBytes = 64;  // bytes of one 32-column block
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, __m256 v[4]) {
    for (int j = 0; j < 4; ++j) v[j] = load8_bf16(reinterpret_cast<const uint16_t*>(row) + b * 32 + 8 * j);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static float tail_value(const char* row, int64_t k) { return bf16_value(load_unaligned<uint16_t>(row, k)); }
};

}  // namespace
}  // namespace tandem::cpu::detail
