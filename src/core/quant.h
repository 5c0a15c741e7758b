// GGUF's block-quantized layouts and the reference quantizers.
//
// The quantizers reproduce ggml's reference (`quantize_row_*_ref`) bit for bit, which is what
// llama.cpp's quantize tool writes when no importance matrix is given: a file tandem quantizes is
// byte-identical to one llama.cpp quantizes from the same f32 weights.
//
// W4A16 in tandem: weights stay in these blocks in memory (and in every device buffer); kernels
// dequantize a block at a time into fp32 registers next to the multiply, and activations and
// accumulators stay fp32 (fp16 on devices whose compute is fp16). No activation is quantized.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/half.h"

namespace tandem {

constexpr int kQK = 32;  // elements per block, Q4_0 and Q8_0

struct BlockQ8_0 {
  fp16_t d;        // scale
  int8_t qs[kQK];  // value = d * qs[i]
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  fp16_t d;              // scale
  uint8_t qs[kQK / 2];   // element j in the low nibble of qs[j], element j+16 in the high nibble
};                       // value = d * (nibble - 8)
static_assert(sizeof(BlockQ4_0) == 18);

// n must be a multiple of kQK.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, size_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, size_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, size_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, size_t n);

}  // namespace tandem
