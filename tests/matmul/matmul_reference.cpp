#include "matmul_reference.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/half.h"
#include "core/quant.h"

namespace tandem::cpu::testing {

TestWeight make_weight(DType type, int64_t rows, int64_t cols, uint32_t seed, size_t pad_bytes) {
  TestWeight w;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  w.row_stride = row_bytes(type, size_t(cols)) + pad_bytes;
  w.bytes.assign(w.row_stride * size_t(rows), 0xA5);  // padding bytes are garbage on purpose
  w.values.resize(size_t(rows * cols));
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> src(static_cast<size_t>(cols)), deq(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    // Rows of varied magnitude so per-block scales differ.
    const float row_scale = 0.05f * float(1 + r % 7);
    for (float& v : src) v = dist(rng) * row_scale;
    uint8_t* dst = w.bytes.data() + size_t(r) * w.row_stride;
    switch (type) {
      case DType::F32:
        std::memcpy(dst, src.data(), src.size() * 4);
        deq = src;
        break;
      case DType::F16:
        for (int64_t k = 0; k < cols; ++k) {
          const fp16_t h = f32_to_fp16(src[k]);
          std::memcpy(dst + 2 * k, &h, 2);
          deq[k] = fp16_to_f32(h);
        }
        break;
      case DType::BF16:
        for (int64_t k = 0; k < cols; ++k) {
          const bf16_t h = f32_to_bf16(src[k]);
          std::memcpy(dst + 2 * k, &h, 2);
          deq[k] = bf16_to_f32(h);
        }
        break;
      default:  // block types: core's quantizer and dequantizer (checked against ggml's bytes)
        quantize_row(type, src.data(), dst, size_t(cols));
        dequantize_row(type, dst, deq.data(), size_t(cols));
        break;
    }
    for (int64_t k = 0; k < cols; ++k) w.values[size_t(r * cols + k)] = deq[k];
  }
  return w;
}

std::vector<float> make_activations(int64_t m, int64_t cols, int64_t ldx, uint32_t seed) {
  std::vector<float> x(size_t(m * ldx), std::numeric_limits<float>::quiet_NaN());
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < cols; ++k) x[size_t(i * ldx + k)] = dist(rng);
  return x;
}

std::vector<double> reference_matmul(const TestWeight& w, const float* x, int64_t m, int64_t ldx) {
  std::vector<double> y(size_t(m * w.rows));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < w.rows; ++r) {
      double s = 0;
      const double* wr = &w.values[size_t(r * w.cols)];
      for (int64_t k = 0; k < w.cols; ++k) s += double(x[i * ldx + k]) * wr[k];
      y[size_t(i * w.rows + r)] = s;
    }
  return y;
}

std::vector<double> error_scale(const TestWeight& w, const float* x, int64_t m, int64_t ldx) {
  std::vector<double> wn(size_t(w.rows));
  for (int64_t r = 0; r < w.rows; ++r) {
    double s = 0;
    for (int64_t k = 0; k < w.cols; ++k) s += w.values[size_t(r * w.cols + k)] * w.values[size_t(r * w.cols + k)];
    wn[size_t(r)] = std::sqrt(s);
  }
  std::vector<double> out(size_t(m * w.rows));
  for (int64_t i = 0; i < m; ++i) {
    double s = 0;
    for (int64_t k = 0; k < w.cols; ++k) s += double(x[i * ldx + k]) * x[i * ldx + k];
    for (int64_t r = 0; r < w.rows; ++r) out[size_t(i * w.rows + r)] = std::sqrt(s) * wn[size_t(r)];
  }
  return out;
}

}  // namespace tandem::cpu::testing
