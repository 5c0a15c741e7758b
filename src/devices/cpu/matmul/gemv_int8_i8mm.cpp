// The aarch64 packed kernels with the int8 matrix multiply (FEAT_I8MM: Snapdragon 8 Gen 3 and 8
// Elite cores, ARMv8.6+): two activation rows at a time take SMMLA, 32 products per instruction,
// so prefill tiles (and batched decode) do half the dot instructions of SDOT; a single row (plain
// decode) keeps SDOT. Compiled with +dotprod+i8mm; chosen only where the CPU reports both.
#include <arm_neon.h>

#define TANDEM_NEON_DOT(acc, w, x) vdotq_s32((acc), (w), (x))
#define TANDEM_NEON_I8MM 1
#include "devices/cpu/matmul/gemv_int8_neon_body.h"

TANDEM_NEON_PACKED_TABLE(kNeonI8mmPacked)
