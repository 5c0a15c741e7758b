// Rounding a TCM size or offset up to a tile or alignment multiple, shared by the op library's
// planners. The NPU's TCM addresses are 32 bits.
#pragma once

#include <cstdint>

namespace tandem::npu::oplib {

inline uint32_t round_up_u32(uint64_t v, uint64_t m) { return uint32_t((v + m - 1) / m * m); }

}  // namespace tandem::npu::oplib
