// fp16 <-> fp32 over rows of TCM bytes, the functional model's other hot loops. Every version
// rounds to nearest-even exactly as core/half.h does (F16C hardware conversion is IEEE RNE too),
// so results do not depend on the host.
#pragma once

#include <cstdint>

namespace tandem::npu::kernels {

// dst[i] = fp16 src[i] widened, for n values (src may be unaligned); signaling NaNs come out quiet.
void widen_fp16_row(const uint8_t* src, float* dst, int n);
// dst[i] = fp16(src[i] + (accumulate ? widened dst[i] : 0)), for n values (dst may be unaligned).
void narrow_fp16_row(const float* src, uint8_t* dst, int n, bool accumulate);

void widen_fp16_row_portable(const uint8_t* src, float* dst, int n);
void narrow_fp16_row_portable(const float* src, uint8_t* dst, int n, bool accumulate);
bool fp16_rows_f16c_available();
void widen_fp16_row_f16c(const uint8_t* src, float* dst, int n);
void narrow_fp16_row_f16c(const float* src, uint8_t* dst, int n, bool accumulate);

}  // namespace tandem::npu::kernels
