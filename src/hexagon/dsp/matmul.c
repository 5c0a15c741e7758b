/* The matmul driver shared by the formats: block sums from a format's chunk kernel (HVX), then
 * scales and the fp32 sum on the scalar core in exactly the reference's order (accumulate.c), so
 * results are bit-exact.
 *
 * Loop order: activation row outer (its scales split once, its values rearranged once where the
 * format wants), weight row inner, a row's blocks in chunks of 32. Prefill re-reads the weights
 * per activation row; under emulation that costs nothing, on a phone a tile of rows per weight
 * load would be next. */
#include "hexagon/protocol.h"
#include "kernels.h"

static int32_t dx_parts[THX_MAX_IN / THX_BLOCK];
static int8_t halves_row[THX_MAX_IN + 256] __attribute__((aligned(128)));
static int32_t block_sums[32] __attribute__((aligned(128)));

void thx_matmul(uint32_t format, const uint8_t* w, const int8_t* q, const uint16_t* xd, float* y, uint32_t n,
                uint32_t in, uint32_t out) {
  const int q8 = format == THX_FORMAT_Q8_0;
  const uint32_t block_bytes = q8 ? THX_Q8_0_BLOCK_BYTES : THX_Q4_0_BLOCK_BYTES;
  const uint32_t nb = in / THX_BLOCK, stride = thx_act_stride(in), row_bytes = nb * block_bytes;
  for (uint32_t r = 0; r < n; ++r) {
    const uint16_t* dx_bits = xd + r * nb;
    for (uint32_t b = 0; b < nb; ++b) dx_parts[b] = thx_scale_parts(dx_bits[b]);
    const int8_t* xq = q + r * stride;
    if (!q8) thx_q4_0_split_halves(xq, nb, halves_row);
    for (uint32_t c = 0; c < out; ++c) {
      const uint8_t* row = w + c * row_bytes;
      float acc = 0.0f;
      for (uint32_t b = 0; b < nb; b += 32) {
        const uint32_t count = nb - b < 32 ? nb - b : 32;
        const uint8_t* blocks = row + b * block_bytes;
        if (q8)
          thx_q8_0_chunk_sums(blocks, count, xq + b * THX_BLOCK, block_sums);
        else
          thx_q4_0_chunk_sums(blocks, count, halves_row + b * THX_BLOCK, block_sums);
        acc = thx_accumulate_blocks(acc, block_sums, blocks, block_bytes, dx_parts + b, dx_bits + b, count);
      }
      y[r * out + c] = acc;
    }
  }
}
