/* The activation quantizer on the DSP: ggml's quantize_row_q8_0_ref on the scalar core's IEEE
 * float (reference.h has the rules). amax / 127 and 1 / d are clang's inline Hexagon division
 * (sfrecipa, sffixupn/d and :lib Newton steps), which rounds correctly: checked against the
 * host's division on 6 million random operand pairs, subnormals included. */
#include "hexagon/protocol.h"
#include "kernels.h"
#include "fp_bits.h"

__attribute__((noinline)) void thx_quantize_block(const float* x, int8_t* q, uint16_t* d) {
  /* The largest |x| by its bits: for values that are not NaN, magnitudes order as their bit
   * patterns do; a NaN (bits above inf's) counts as 0, so it never wins, as on the host. */
  uint32_t amax_bits = 0;
  for (uint32_t j = 0; j < THX_BLOCK; ++j) {
    const uint32_t ab = thx_f32_bits(x[j]) & 0x7fffffffu;
    const uint32_t candidate = ab <= 0x7f800000u ? ab : 0u;
    amax_bits = candidate > amax_bits ? candidate : amax_bits;
  }
  const float scale = thx_bits_f32(amax_bits) / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  *d = (uint16_t)thx_f32_to_f16(scale);
  /* Four values to a word store (q is 4-byte aligned: rows start at multiples of 128). */
  uint32_t* q32 = (uint32_t*)q;
  for (uint32_t j = 0; j < THX_BLOCK; j += 4) {
    uint32_t packed = 0;
    for (uint32_t k = 0; k < 4; ++k) packed |= ((uint32_t)thx_round_q8(x[j + k] * inv) & 0xffu) << (8 * k);
    q32[j / 4] = packed;
  }
}

void thx_quantize_rows(const float* x, int8_t* q, uint16_t* d, uint32_t n, uint32_t in) {
  const uint32_t stride = thx_act_stride(in), nb = in / THX_BLOCK;
  for (uint32_t r = 0; r < n; ++r) {
    const float* xr = x + r * in;
    int8_t* qr = q + r * stride;
    for (uint32_t b = 0; b < nb; ++b) thx_quantize_block(xr + b * THX_BLOCK, qr + b * THX_BLOCK, d + r * nb + b);
    for (uint32_t j = in; j < stride; j += 4) *(uint32_t*)(qr + j) = 0; /* the row's padding: defined bytes */
  }
}
