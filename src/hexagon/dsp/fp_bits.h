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

/* round(v) half away from zero, NaN -> 0, saturated to [-127, 127] (see reference.h). Below
 * 127 in magnitude, v - trunc(v) is exact, so comparing it with +-0.5 rounds exactly. */
static inline int32_t thx_round_q8(float v) {
  if (!(v == v)) return 0;
  if (v >= 127.0f) return 127;
  if (v <= -127.0f) return -127;
  int32_t i = (int32_t)v; /* convert_sf2w:chop */
  const float frac = v - (float)i;
  if (frac >= 0.5f) ++i;
  else if (frac <= -0.5f) --i;
  return i;
}

#endif
