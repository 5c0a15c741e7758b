// Operator library: elementwise ops on the vector unit at a static shape [n rows, d cols], fp16
// row-major in DDR. Rows are chunked through TCM (row pitch padded to the TCM alignment), chunks
// double-buffered (load chunk c+1 while chunk c computes, write back as soon as it is done).
//   rmsnorm: buffers 0 x [n,d], 1 w [d], 2 y [n,d];  y = x * w / sqrt(mean(x^2) + eps)
//   swiglu:  buffers 0 a [n,d], 1 b [n,d], 2 y [n,d]; y = silu(a) * b
//   add:     buffers 0 a [n,d], 1 b [n,d], 2 y [n,d]; y = a + b
// Not yet here: rope and attention (softmax, KV) — they come with the compiler's fused clusters.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu::oplib {

enum class EltOp { kRmsNorm, kSwiglu, kAdd };

Result<Program> lower_elementwise(EltOp op, uint32_t n, uint32_t d, const TargetModel& t, float eps = 1e-5f);

}  // namespace tandem::npu::oplib
