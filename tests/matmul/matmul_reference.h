// Test fixtures for the matmul kernels: random weights in every stored type, and the naive
// double-precision reference that dequantizes them with core/quant.h.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "devices/cpu/matmul/matmul.h"

namespace tandem::cpu::testing {

struct TestWeight {
  DType type;
  int64_t rows = 0, cols = 0;
  size_t row_stride = 0;
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // rows x cols, dequantized by the reference routines
  WeightView view() const { return WeightView{type, bytes.data(), rows, cols, row_stride}; }
};

// Random weights (deterministic in seed); rows are row_bytes + pad_bytes apart.
TestWeight make_weight(DType type, int64_t rows, int64_t cols, uint32_t seed, size_t pad_bytes = 0);

// m rows of cols random activations with stride ldx; the padding columns hold NaN, so a kernel
// that reads past cols poisons its result.
std::vector<float> make_activations(int64_t m, int64_t cols, int64_t ldx, uint32_t seed);

// y[i, r] = sum_k x[i, k] * W[r, k] in double (m x rows, dense).
std::vector<double> reference_matmul(const TestWeight& w, const float* x, int64_t m, int64_t ldx);

// |x_i| * |W_r|: the scale an fp32 / bf16 dot product's rounding error is proportional to.
std::vector<double> error_scale(const TestWeight& w, const float* x, int64_t m, int64_t ldx);

}  // namespace tandem::cpu::testing
