// Functions shared between the AVX-512 files (defined in files compiled with AVX-512 flags; call
// them only after checking isa_available(kAvx512)).
#pragma once

#include <cstdint>

#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu::detail::avx512 {

// Panel packers with the GemmKernels::pack_panel signature, NR = 32.
// fp32 panel: [kc][32] floats, any weight type.
void pack_panel_f32(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float* scales);
// bf16 panel: [kc/2][32][2] bf16 (k pairs interleaved so one dword lane holds a row's pair).
// BF16 weights are copied; Q8_0 / Q4_0 store their integer levels (exact in bf16) and write the
// block scales as fp32: scales[(k/32)*32 + r].
void pack_panel_bf16(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel, float* scales);
// The same bf16 panel from a block-quantized weight's packed copy (w.packed, rows from
// w.packed_row0 + r0; any type amx_bf16_packed_gemm admits), each value dequantized and rounded
// to bf16 (no separate scales).
void pack_panel_packed_bf16(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel,
                            float* scales);

}  // namespace tandem::cpu::detail::avx512
