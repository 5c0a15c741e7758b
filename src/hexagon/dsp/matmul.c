/* The matmul driver shared by the formats: block sums from a format's chunk kernel (HVX), scales
 * and the fp32 sum on the scalar core in exactly the reference's order, so results are bit-exact.
 *
 * Loop order: activation row outer (its fp16 scales widened once into dx), weight row inner, a
 * row's blocks in chunks of 32 (one reduced vector of sums each). Prefill re-reads the weights
 * per activation row; under emulation that costs nothing, on a phone a tile of rows per weight
 * load would be next. */
#include "hexagon/protocol.h"
#include "fp_bits.h"
#include "kernels.h"

static float dx_row[THX_MAX_IN / THX_BLOCK];
static int32_t block_sums[32] __attribute__((aligned(128)));

__attribute__((noinline)) float thx_accumulate_blocks(float acc, const int32_t* sums, const uint8_t* blocks,
                                                      uint32_t block_bytes, const float* dx, uint32_t count) {
  for (uint32_t k = 0; k < count; ++k) {
    const uint8_t* b = blocks + k * block_bytes;
    const float dw = thx_f16_to_f32((uint32_t)b[0] | ((uint32_t)b[1] << 8)); /* any alignment */
    const float scale = dw * dx[k];
    acc = acc + scale * (float)sums[k];
  }
  return acc;
}

void thx_matmul(const uint8_t* w, uint32_t block_bytes, thx_chunk_sums_fn chunk, const int8_t* q,
                const uint16_t* xd, float* y, uint32_t n, uint32_t in, uint32_t out) {
  const uint32_t nb = in / THX_BLOCK, stride = thx_act_stride(in), row_bytes = nb * block_bytes;
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t b = 0; b < nb; ++b) dx_row[b] = thx_f16_to_f32(xd[r * nb + b]);
    const int8_t* xq = q + r * stride;
    for (uint32_t c = 0; c < out; ++c) {
      const uint8_t* row = w + c * row_bytes;
      float acc = 0.0f;
      for (uint32_t b = 0; b < nb; b += 32) {
        const uint32_t count = nb - b < 32 ? nb - b : 32;
        chunk(row + b * block_bytes, count, xq + b * THX_BLOCK, block_sums);
        acc = thx_accumulate_blocks(acc, block_sums, row + b * block_bytes, block_bytes, dx_row + b, count);
      }
      y[r * out + c] = acc;
    }
  }
}
