/* Scalar float helpers of the DSP, exact and independent of any conversion instruction (v66 has
 * no scalar fp16 ones): fp16 <-> fp32 by bit manipulation, and the activation quantizer's
 * rounding. They must agree bit for bit with the host oracle (reference.cpp), which computes the
 * same values another way; the tests compare the two. */
#ifndef TANDEM_HEXAGON_DSP_FP_BITS_H
#define TANDEM_HEXAGON_DSP_FP_BITS_H

#include <stdint.h>

static inline uint32_t thx_f32_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}

static inline float thx_bits_f32(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

/* fp16 bits -> fp32, exact. Subnormals are normalized with a leading-zero count. */
static inline float thx_f16_to_f32(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  if (em >= 0x7c00u) return thx_bits_f32(sign | 0x7f800000u | ((em & 0x3ffu) << 13)); /* inf, NaN */
  if (em >= 0x0400u) return thx_bits_f32(sign | ((em << 13) + (112u << 23)));          /* rebias 15 -> 127 */
  if (em == 0) return thx_bits_f32(sign);
  /* em * 2^-24 with its leading one at bit p (0..9): exponent p - 24, biased p + 103 */
  const uint32_t p = 31u - (uint32_t)__builtin_clz(em);
  return thx_bits_f32(sign | ((p + 103u) << 23) | ((em << (23u - p)) & 0x7fffffu));
}

/* fp32 -> fp16 bits, round to nearest even (ggml's GGML_FP32_TO_FP16 on finite values; a NaN
 * keeps its top payload bits and is made quiet). Below 2^-14 the float adder does the rounding:
 * |x| + 0.5 has an ulp of 2^-24, one fp16 subnormal step, so its low mantissa bits are the
 * subnormal rounded to nearest even. */
static inline uint32_t thx_f32_to_f16(float f) {
  const uint32_t x = thx_f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u | ((ax >> 13) & 0x3ffu);
  if (ax >= 0x477ff000u) return sign | 0x7c00u; /* 65520 and up round to inf */
  if (ax < 0x38800000u) {
    const float sum = thx_bits_f32(ax) + 0.5f;
    return sign | (thx_f32_bits(sum) - 0x3f000000u);
  }
  const uint32_t r = ax - (112u << 23); /* rebias; the 13 bits below the fp16 mantissa remain */
  return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
}

/* round(v) half away from zero, NaN -> 0, saturated to [-127, 127] (see reference.h), on v's
 * bits: with the significand m (leading one included) and v = m * 2^(e - 150), adding half a
 * unit of the last integer place to m and shifting it off rounds the magnitude half up, which is
 * half away from zero once the sign goes back on. No float instruction (each costs 20-60 ns
 * under qemu, an integer one ~2), no branch. */
static inline int32_t thx_round_q8(float v) {
  const uint32_t u = thx_f32_bits(v);
  const uint32_t e = (u >> 23) & 0xffu;
  const uint32_t m = (u & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 150u - e;                                  /* in 17..24 for 0.5 <= |v| < 128 */
  uint32_t q = e < 126u ? 0u : e >= 134u ? 127u : (m + (1u << (shift - 1u))) >> shift;
  q = q > 127u ? 127u : q; /* 127.5 <= |v| < 128: not reached from quantize (|x * id| < 127.01) */
  q = (u & 0x7fffffffu) > 0x7f800000u ? 0u : q;                      /* NaN */
  return u >> 31 ? -(int32_t)q : (int32_t)q;
}

#endif
