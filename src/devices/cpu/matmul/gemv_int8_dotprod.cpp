// The aarch64 packed decode kernels with the int8 dot product (FEAT_DotProd, ARMv8.2+: every phone
// core HeteroInfer targets): SDOT sums four rows' four-byte products into four int32 lanes in one
// instruction. Compiled with +dotprod; chosen only where the CPU reports it (cpu_features()).
#include <arm_neon.h>

#define TANDEM_NEON_DOT(acc, w, x) vdotq_s32((acc), (w), (x))
#include "devices/cpu/matmul/gemv_int8_neon_body.h"

TANDEM_NEON_PACKED_TABLE(kNeonDotprodPacked)
