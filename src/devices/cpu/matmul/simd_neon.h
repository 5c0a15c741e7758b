// Block decoders for the Advanced SIMD (NEON) kernels of aarch64. NEON is part of every ARMv8-A
// core, so these files build with baseline flags; everything is in an anonymous namespace all the
// same, as the x86 ISA headers, so the files that add dotprod or i8mm flags can include it.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "core/quant.h"

namespace tandem::cpu::detail {
namespace {

inline float fp16_scale(uint16_t h) {
  __fp16 v;  // fp16 <-> fp32 conversion is an ARMv8-A instruction (fcvt)
  std::memcpy(&v, &h, 2);
  return float(v);
}
inline float bf16_value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Sixteen int8 as four float32x4 (elements 0-3, 4-7, 8-11, 12-15), exact.
inline void s8x16_to_f32(int8x16_t q, float32x4_t* v) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
  v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  v[1] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo)));
  v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  v[3] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi)));
}

// 32 levels of a Q4_0 block as eight float32x4 (columns 0-3, ..., 28-31), exact (q - 8).
inline void q4_levels(const BlockQ4_0* b, float32x4_t v[8]) {
  const uint8x16_t bytes = vld1q_u8(b->qs);
  const int8x16_t eight = vdupq_n_s8(8);
  s8x16_to_f32(vsubq_s8(vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(0x0f))), eight), v);
  s8x16_to_f32(vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4)), eight), v + 4);
}

inline void q8_levels(const BlockQ8_0* b, float32x4_t v[8]) {
  s8x16_to_f32(vld1q_s8(b->qs), v);
  s8x16_to_f32(vld1q_s8(b->qs + 16), v + 4);
}

// Four fp16 / bf16 values as fp32 (p need not be aligned).
inline float32x4_t load4_f16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
inline float32x4_t load4_bf16(const uint16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }

}  // namespace
}  // namespace tandem::cpu::detail
