/* The scalar core's half of a matmul: each block's exact int32 product scaled and summed in fp32
 * in the reference's order, acc += (dw * dx) * float(isum).
 *
 * The value is the reference's bit for bit, computed with one float multiply fewer: dw * dx is
 * exact in fp32 (two 11-bit significands make at most 22 bits; |dw * dx| lies in
 * [2^-48, 65504^2], never subnormal, never overflowing) and float(isum) is exact
 * (|isum| <= 32 * 128 * 127 < 2^24), so (dw * dx) * float(isum) is one rounding of the exact
 * product mw * mx * isum * 2^k. That integer (< 2^42) is rounded once by convert_d2sf (round to
 * nearest even) and scaled by 2^k in its exponent field, exact while the result is normal, which
 * it is (k in [-48, 10]). Under qemu sfmpy costs ~58 ns, convert_w2sf ~19, convert_d2sf ~29,
 * sfadd ~22 and an integer instruction ~2; on the DSP the count of float operations drops too.
 * A zero product adds +0 where the reference adds +-0: the same, since acc + (+-0) == acc for
 * every acc the sum can hold (it starts at +0 and x + -x is +0, so acc is never -0). A chunk
 * with a scale that is inf or NaN is summed again with the literal float expression. */
#include "fp_bits.h"
#include "kernels.h"

int32_t thx_scale_parts(uint32_t h) {
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return 0;
  const int32_t m = (int32_t)(exp == 0 ? mant : mant | 0x400u);
  return (int32_t)((uint32_t)(h & 0x8000u ? -m : m) << 8) | (int32_t)(exp == 0 ? 1 : exp);
}

/* The reference's expression as written, for a chunk with an inf or NaN scale. */
__attribute__((noinline)) static float accumulate_literal(float acc, const int32_t* sums, const uint8_t* blocks,
                                                          uint32_t block_bytes, const uint16_t* dx_bits,
                                                          uint32_t count) {
  for (uint32_t k = 0; k < count; ++k) {
    const uint8_t* b = blocks + k * block_bytes;
    const float dw = thx_f16_to_f32((uint32_t)b[0] | ((uint32_t)b[1] << 8));
    acc = acc + (dw * thx_f16_to_f32(dx_bits[k])) * (float)sums[k];
  }
  return acc;
}

/* One block's (dw * dx) * float(isum) as fp32 bits, for finite scales (see the top). No branch:
 * under qemu each one ends a translation block, and a branch-free body lets clang pipeline the
 * loop; the sign is applied arithmetically and a zero product is +0. */
static inline uint32_t term_bits(int32_t isum, uint32_t dw_bits, int32_t dx) {
  const uint32_t exp = (dw_bits >> 10) & 0x1fu;
  const int32_t neg = -(int32_t)(dw_bits >> 15); /* 0 or -1 */
  const int32_t mw = ((int32_t)((dw_bits & 0x3ffu) | (exp != 0 ? 0x400u : 0u)) ^ neg) - neg;
  const int32_t ew = exp != 0 ? (int32_t)exp : 1;
  const int64_t p = (int64_t)(mw * (dx >> 8)) * isum;
  const uint32_t scaled = thx_f32_bits((float)p) + ((uint32_t)(ew + (dx & 0xff) - 50) << 23);
  return p != 0 ? scaled : 0u;
}

__attribute__((noinline)) float thx_accumulate_blocks(float acc, const int32_t* sums, const uint8_t* blocks,
                                                      uint32_t block_bytes, const int32_t* dx_parts,
                                                      const uint16_t* dx_bits, uint32_t count) {
  const float start = acc;
  uint32_t special = 0; /* any inf / NaN scale among the chunk's: then the literal expression */
  for (uint32_t k = 0; k < count; ++k) {
    const uint8_t* b = blocks + k * block_bytes;
    const uint32_t dw_bits = (uint32_t)b[0] | ((uint32_t)b[1] << 8); /* any alignment */
    special |= ((dw_bits & 0x7c00u) == 0x7c00u) | (dx_parts[k] == 0);
    acc = acc + thx_bits_f32(term_bits(sums[k], dw_bits, dx_parts[k]));
  }
  if (__builtin_expect(special != 0, 0)) return accumulate_literal(start, sums, blocks, block_bytes, dx_bits, count);
  return acc;
}
