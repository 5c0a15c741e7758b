// The weight types' block decoders for the NEON kernels (gemv_neon.cpp, row_sum_neon.cpp), the
// same interface as weight_blocks_avx2.h with a 32-column block as eight float32x4.
#pragma once

#include <cstring>

#include "devices/cpu/matmul/simd_neon.h"

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
  static constexpr bool kScaled = true;
  static void levels(const char* row, int64_t b, float32x4_t v[8]) {
    q4_levels(reinterpret_cast<const BlockQ4_0*>(row) + b, v);
  }
  static float scale(const char* row, int64_t b) { return fp16_scale(reinterpret_cast<const BlockQ4_0*>(row)[b].d); }
  static float tail_value(const char*, int64_t) { return 0.0f; }
};
struct WeightQ8 {
  static constexpr bool kScaled = true;
  static void levels(const char* row, int64_t b, float32x4_t v[8]) {
    q8_levels(reinterpret_cast<const BlockQ8_0*>(row) + b, v);
  }
  static float scale(const char* row, int64_t b) { return fp16_scale(reinterpret_cast<const BlockQ8_0*>(row)[b].d); }
  static float tail_value(const char*, int64_t) { return 0.0f; }
};
struct WeightF32 {
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, float32x4_t v[8]) {
    for (int j = 0; j < 8; ++j) v[j] = vld1q_f32(reinterpret_cast<const float*>(row) + b * 32 + 4 * j);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static float tail_value(const char* row, int64_t k) { return load_unaligned<float>(row, k); }
};
struct WeightF16 {
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, float32x4_t v[8]) {
    for (int j = 0; j < 8; ++j) v[j] = load4_f16(reinterpret_cast<const uint16_t*>(row) + b * 32 + 4 * j);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static float tail_value(const char* row, int64_t k) { return fp16_scale(load_unaligned<uint16_t>(row, k)); }
};
struct WeightBF16 {
  static constexpr bool kScaled = false;
  static void levels(const char* row, int64_t b, float32x4_t v[8]) {
    for (int j = 0; j < 8; ++j) v[j] = load4_bf16(reinterpret_cast<const uint16_t*>(row) + b * 32 + 4 * j);
  }
  static float scale(const char*, int64_t) { return 1.0f; }
  static float tail_value(const char* row, int64_t k) { return bf16_value(load_unaligned<uint16_t>(row, k)); }
};

}  // namespace
}  // namespace tandem::cpu::detail
