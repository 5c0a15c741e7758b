// fp16 <-> fp32 over rows of bytes: the NPU model's TCM rows and the cpu's f16 KV cache. Every
// version rounds to nearest-even exactly as core/half.h does (F16C and the aarch64 conversions
// are IEEE RNE too), so results do not depend on the host.
#pragma once

#include <cstdint>

namespace tandem {

// dst[i] = fp16 src[i] widened, for n values (src may be unaligned); signaling NaNs come out quiet.
void widen_fp16_row(const uint8_t* src, float* dst, int n);
// dst[i] = fp16(src[i] + (accumulate ? widened dst[i] : 0)), for n values (dst may be unaligned).
void narrow_fp16_row(const float* src, uint8_t* dst, int n, bool accumulate);

// The versions the two above choose between: the portable loops (core/half.h per value) and the
// hardware conversions (F16C on x86-64, fcvt on aarch64), where fp16_rows_simd_available().
void widen_fp16_row_portable(const uint8_t* src, float* dst, int n);
void narrow_fp16_row_portable(const float* src, uint8_t* dst, int n, bool accumulate);
bool fp16_rows_simd_available();
void widen_fp16_row_simd(const uint8_t* src, float* dst, int n);
void narrow_fp16_row_simd(const float* src, uint8_t* dst, int n, bool accumulate);

}  // namespace tandem
