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

#include "core/dtype.h"
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

struct BlockQ4_1 {
  fp16_t d, m;          // scale, minimum
  uint8_t qs[kQK / 2];  // nibbles as Q4_0's; value = d * nibble + m
};
static_assert(sizeof(BlockQ4_1) == 20);

struct BlockQ5_0 {
  fp16_t d;
  uint8_t qh[4];        // bit j: the fifth bit of element j
  uint8_t qs[kQK / 2];  // low four bits, as Q4_0's nibbles; value = d * (q - 16)
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ5_1 {
  fp16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];  // value = d * q + m
};
static_assert(sizeof(BlockQ5_1) == 24);

// IQ4_NL: Q4_0's layout, but each nibble indexes a non-linear table of 16 levels (kIq4nlLevels).
struct BlockIQ4_NL {
  fp16_t d;
  uint8_t qs[kQK / 2];  // value = d * kIq4nlLevels[nibble]
};
static_assert(sizeof(BlockIQ4_NL) == 18);
extern const int8_t kIq4nlLevels[16];

// K-quants: super-blocks of 256 elements in sub-blocks of 16 or 32, whose scales (and minimums)
// are themselves quantized against the super-block's fp16 d (and dmin).
constexpr int kQK_K = 256;

struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // per 16 elements: scale in the low nibble, minimum in the high
  uint8_t qs[kQK_K / 4];       // 2-bit quants
  fp16_t d, dmin;              // value = d * scale * q - dmin * min
};
static_assert(sizeof(BlockQ2_K) == 84);

struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // the high bit of each quant
  uint8_t qs[kQK_K / 4];     // the low two bits
  uint8_t scales[12];        // sixteen 6-bit scales (offset by 32)
  fp16_t d;                  // value = d * (scale - 32) * (q - 4 if its high bit is clear, else q)
};
static_assert(sizeof(BlockQ3_K) == 110);

struct BlockQ4_K {
  fp16_t d, dmin;
  uint8_t scales[12];      // eight 6-bit scales and eight 6-bit minimums, one pair per 32 elements
  uint8_t qs[kQK_K / 2];   // 4-bit quants; value = d * scale * q - dmin * min
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  fp16_t d, dmin;
  uint8_t scales[12];     // as Q4_K's
  uint8_t qh[kQK_K / 8];  // the fifth bits
  uint8_t qs[kQK_K / 2];  // the low four bits
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // the low four bits
  uint8_t qh[kQK_K / 4];      // the high two bits
  int8_t scales[kQK_K / 16];  // 8-bit scales, one per 16 elements
  fp16_t d;                   // value = d * scale * (q - 32)
};
static_assert(sizeof(BlockQ6_K) == 210);

struct BlockIQ4_XS {
  fp16_t d;
  uint16_t scales_h;          // the high 2 bits of eight 6-bit scales (offset by 32)
  uint8_t scales_l[kQK_K / 64];  // their low 4 bits
  uint8_t qs[kQK_K / 2];      // nibbles indexing kIq4nlLevels, per 32 elements as IQ4_NL's
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// n must be a multiple of the type's block size (32, or kQK_K for the K-quants and IQ4_XS).
// The quantizers are ggml's reference ones without an importance matrix (what llama-quantize
// writes without --imatrix), bit for bit; the dequantizers are ggml's, exactly.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, size_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, size_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, size_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, size_t n);

void quantize_row_q4_1(const float* x, BlockQ4_1* y, size_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, size_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, size_t n);
void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, size_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, size_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, size_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, size_t n);
void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, size_t n);

void quantize_row_q2_k(const float* x, BlockQ2_K* y, size_t n);
void quantize_row_q3_k(const float* x, BlockQ3_K* y, size_t n);
void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n);
void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n);
void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n);
void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, size_t n);
void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n);
void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n);
void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n);
void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n);
void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n);

// Any type by its DType (f32, f16 and bf16 convert): n elements of one row, n a multiple of the
// type's block size. Thread-safe; the quantizers are ggml's reference ones as above.
void quantize_row(DType t, const float* x, void* y, size_t n);
void dequantize_row(DType t, const void* x, float* y, size_t n);

}  // namespace tandem
