// Rows of any stored type by its DType: the switch from a type to its block routines (quant.h).
#include <cstring>

#include "core/quant.h"

namespace tandem {

void quantize_row(DType t, const float* x, void* y, size_t n) {
  switch (t) {
    case DType::F32: std::memcpy(y, x, n * sizeof(float)); return;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) static_cast<fp16_t*>(y)[i] = f32_to_fp16(x[i]);
      return;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) static_cast<bf16_t*>(y)[i] = f32_to_bf16(x[i]);
      return;
    case DType::Q4_0: return quantize_row_q4_0(x, static_cast<BlockQ4_0*>(y), n);
    case DType::Q4_1: return quantize_row_q4_1(x, static_cast<BlockQ4_1*>(y), n);
    case DType::Q5_0: return quantize_row_q5_0(x, static_cast<BlockQ5_0*>(y), n);
    case DType::Q5_1: return quantize_row_q5_1(x, static_cast<BlockQ5_1*>(y), n);
    case DType::Q8_0: return quantize_row_q8_0(x, static_cast<BlockQ8_0*>(y), n);
    case DType::Q2_K: return quantize_row_q2_k(x, static_cast<BlockQ2_K*>(y), n);
    case DType::Q3_K: return quantize_row_q3_k(x, static_cast<BlockQ3_K*>(y), n);
    case DType::Q4_K: return quantize_row_q4_k(x, static_cast<BlockQ4_K*>(y), n);
    case DType::Q5_K: return quantize_row_q5_k(x, static_cast<BlockQ5_K*>(y), n);
    case DType::Q6_K: return quantize_row_q6_k(x, static_cast<BlockQ6_K*>(y), n);
    case DType::IQ4_NL: return quantize_row_iq4_nl(x, static_cast<BlockIQ4_NL*>(y), n);
    case DType::IQ4_XS: return quantize_row_iq4_xs(x, static_cast<BlockIQ4_XS*>(y), n);
  }
}

void dequantize_row(DType t, const void* x, float* y, size_t n) {
  switch (t) {
    case DType::F32: std::memcpy(y, x, n * sizeof(float)); return;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) y[i] = fp16_to_f32(static_cast<const fp16_t*>(x)[i]);
      return;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) y[i] = bf16_to_f32(static_cast<const bf16_t*>(x)[i]);
      return;
    case DType::Q4_0: return dequantize_row_q4_0(static_cast<const BlockQ4_0*>(x), y, n);
    case DType::Q4_1: return dequantize_row_q4_1(static_cast<const BlockQ4_1*>(x), y, n);
    case DType::Q5_0: return dequantize_row_q5_0(static_cast<const BlockQ5_0*>(x), y, n);
    case DType::Q5_1: return dequantize_row_q5_1(static_cast<const BlockQ5_1*>(x), y, n);
    case DType::Q8_0: return dequantize_row_q8_0(static_cast<const BlockQ8_0*>(x), y, n);
    case DType::Q2_K: return dequantize_row_q2_k(static_cast<const BlockQ2_K*>(x), y, n);
    case DType::Q3_K: return dequantize_row_q3_k(static_cast<const BlockQ3_K*>(x), y, n);
    case DType::Q4_K: return dequantize_row_q4_k(static_cast<const BlockQ4_K*>(x), y, n);
    case DType::Q5_K: return dequantize_row_q5_k(static_cast<const BlockQ5_K*>(x), y, n);
    case DType::Q6_K: return dequantize_row_q6_k(static_cast<const BlockQ6_K*>(x), y, n);
    case DType::IQ4_NL: return dequantize_row_iq4_nl(static_cast<const BlockIQ4_NL*>(x), y, n);
    case DType::IQ4_XS: return dequantize_row_iq4_xs(static_cast<const BlockIQ4_XS*>(x), y, n);
  }
}

}  // namespace tandem
