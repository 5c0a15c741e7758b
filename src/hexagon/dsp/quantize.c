/* The activation quantizer on the DSP: ggml's quantize_row_q8_0_ref on the scalar core's IEEE
 * float (reference.h has the rules). amax / 127 and 1 / d are clang's inline Hexagon division
 * (sfrecipa, sffixupn/d and :lib Newton steps), which rounds correctly: checked against the
 * host's division on 6 million random operand pairs, subnormals included. */
#include "hexagon/protocol.h"
#include "kernels.h"
#include "fp_bits.h"

__attribute__((noinline)) void thx_quantize_block(const float* x, int8_t* q, uint16_t* d) {
  float amax = 0.0f;
  for (uint32_t j = 0; j < THX_BLOCK; ++j) {
    const float ax = thx_bits_f32(thx_f32_bits(x[j]) & 0x7fffffffu);
    if (amax < ax) amax = ax; /* false for NaN, as on the host */
  }
  const float scale = amax / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  *d = (uint16_t)thx_f32_to_f16(scale);
  for (uint32_t j = 0; j < THX_BLOCK; ++j) q[j] = (int8_t)thx_round_q8(x[j] * inv);
}

void thx_quantize_rows(const float* x, int8_t* q, uint16_t* d, uint32_t n, uint32_t in) {
  const uint32_t stride = thx_act_stride(in), nb = in / THX_BLOCK;
  for (uint32_t r = 0; r < n; ++r) {
    const float* xr = x + r * in;
    int8_t* qr = q + r * stride;
    for (uint32_t b = 0; b < nb; ++b) thx_quantize_block(xr + b * THX_BLOCK, qr + b * THX_BLOCK, d + r * nb + b);
    for (uint32_t j = in; j < stride; ++j) qr[j] = 0; /* the row's padding: defined bytes */
  }
}
