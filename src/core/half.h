// IEEE half (fp16) and bfloat16 conversions, bit-identical to ggml's reference conversions:
// fp32 -> fp16 rounds to nearest even (what F16C's _cvtss_sh(x, 0) does), fp32 -> bf16 rounds to
// nearest even and quiets NaNs. These define the bytes tandem writes into GGUF files.
#pragma once

#include <cstdint>
#include <cstring>

namespace tandem {

using fp16_t = uint16_t;
using bf16_t = uint16_t;

inline float bits_to_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t f32_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float fp16_to_f32(fp16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return bits_to_f32(sign);
    // subnormal: value = mant * 2^-24
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
  return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

inline fp16_t f32_to_fp16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or nan
    return fp16_t(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
  }
  if (ax >= 0x477ff000u) return fp16_t(sign | 0x7c00);  // rounds to >= 65520: overflow to inf
  if (ax < 0x38800000u) {                               // below the smallest normal half (2^-14)
    if (ax < 0x33000000u) return fp16_t(sign);          // below half the smallest subnormal
    // subnormal half: shift the 24-bit significand and round to nearest even
    const uint32_t e = ax >> 23;
    const uint32_t m = (ax & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // value = m * 2^(e-150); in units of 2^-24 that is m >> (126-e)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1))) ++r;
    return fp16_t(sign | r);
  }
  // normal: rebias exponent, round mantissa from 23 to 10 bits, nearest even
  uint32_t r = ((ax >> 13) - (112u << 10));
  const uint32_t rem = ax & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return fp16_t(sign | r);
}

inline float bf16_to_f32(bf16_t h) { return bits_to_f32(uint32_t(h) << 16); }

inline bf16_t f32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t((u >> 16) | 64);  // quiet NaN, as ggml does
  return bf16_t((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

}  // namespace tandem
