// The host oracle for the Hexagon kernels: the integer arithmetic v66 HVX can do, written plainly
// in C++, which the DSP's kernels must reproduce bit for bit.
//
// The numerics (the contract both sides keep):
//  - Weights stay in ggml's blocks as the model carries them: Q8_0 (fp16 d, 32 int8) and Q4_0
//    (fp16 d, 16 bytes of nibbles: value j < 16 is the low nibble of byte j minus 8, value
//    j >= 16 the high nibble of byte j - 16 minus 8). K-quants are out of scope for now.
//  - Activations (fp32 rows) are quantized per block of 32 as ggml's quantize_row_q8_0_ref:
//    amax = the largest |x| (NaNs never win the comparison), d = amax / 127 (fp32, correctly
//    rounded), id = d != 0 ? 1 / d : 0, q = round(x * id) with round-half-away-from-zero
//    (roundf). The stored scale is fp16(d), rounded to nearest even. Past ggml: a NaN product
//    quantizes to 0 and the result saturates to [-127, 127] -- ggml leaves both undefined (a
//    float -> int8 conversion out of range), and for finite blocks whose 1/d is finite the
//    saturation never fires, so there the values are ggml's bit for bit.
//  - A block's dot product is exact in int32 (|sum| <= 32 * 127 * 127 for Q8_0).
//  - Blocks are summed in fp32, block by block in order, starting from +0:
//        acc += (float(dw) * float(dx)) * float(isum)
//    where dw and dx are the fp16 scales widened exactly: the scale in the product is the
//    fp16-rounded one, never the fp32 d the values were quantized with. No fused multiply-add
//    (this library and the DSP code build with -ffp-contract=off).
//  - fp16 -> fp32 by bit manipulation (exact; no conversion instruction involved).
// NaN results: their payload differs between cores (x86 makes 0xffc00000, Hexagon 0xffffffff),
// so a NaN agrees with a NaN; every other result agrees in its bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "hexagon/protocol.h"

namespace tandem::hexagon {

enum class WeightFormat : uint32_t { kQ4_0 = THX_FORMAT_Q4_0, kQ8_0 = THX_FORMAT_Q8_0 };

const char* format_name(WeightFormat f);
size_t block_bytes(WeightFormat f);
// Bytes of `rows` weight rows of `in` values (in a multiple of 32).
size_t weight_bytes(WeightFormat f, uint32_t rows, uint32_t in);

// Quantized activation rows in the layout the DSP reads (protocol.h): int8 rows of
// thx_act_stride(in) bytes (the tail of a row 0), fp16 scales [n][in / 32].
struct QuantizedActivations {
  uint32_t n = 0, in = 0;
  std::vector<int8_t> q;
  std::vector<uint16_t> d;

  size_t stride() const { return thx_act_stride(in); }
  size_t blocks_per_row() const { return in / THX_BLOCK; }
};

// n >= 1; in a multiple of 32, at least 32 and at most THX_MAX_IN (what the DSP takes).
Status check_activation_shape(uint32_t n, uint32_t in);

// x: n rows of in floats.
Result<QuantizedActivations> quantize_activations(std::span<const float> x, uint32_t n, uint32_t in);

// y[row][col] = sum over blocks of x's row `row` times weight row `col`: [n][out] floats.
// weights: out rows of in / 32 blocks, at least weight_bytes(f, out, x.in) bytes.
Result<std::vector<float>> matmul(WeightFormat f, std::span<const uint8_t> weights, uint32_t out,
                                  const QuantizedActivations& x);

// The pieces, for tests.
float fp16_bits_to_f32(uint16_t h);
int8_t quantize_value(float v);  // round half away from zero; NaN -> 0; saturates at +-127
int32_t block_dot(WeightFormat f, const uint8_t* block, const int8_t* x);  // one block of 32

}  // namespace tandem::hexagon
