// Operator library: elementwise ops on the vector unit at a static shape [n rows, d cols], fp16
// row-major in DDR. Rows are chunked through TCM (row pitch padded to the TCM alignment), chunks
// double-buffered (load chunk c+1 while chunk c computes, write back as soon as it is done).
//   rmsnorm: buffers 0 x [n,d], 1 w [d], 2 y [n,d];  y = x * w / sqrt(mean(x^2) + eps)
//   swiglu:  buffers 0 a [n,d], 1 b [n,d], 2 y [n,d]; y = silu(a) * b
//   add:     buffers 0 a [n,d], 1 b [n,d], 2 y [n,d]; y = a + b
// Not yet here: rope and attention (softmax, KV) — they come with the compiler's fused clusters.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/status.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu::oplib {

enum class EltOp { kRmsNorm, kSwiglu, kAdd };
std::string_view elt_op_name(EltOp op);  // "rmsnorm", "swiglu", "add"
std::optional<EltOp> elt_op_from_name(std::string_view name);

// The TCM the program may use: [base, base + bytes). The default is the whole TCM; the compiler
// passes the region its allocator placed.
struct TcmWindow {
  uint32_t base = 0;
  uint64_t bytes = 0;  // 0 = the target's TCM from base
};

// TCM bytes for chunks of `rows_per_chunk` rows (double-buffered, plus the rmsnorm gain row);
// rows_per_chunk = n asks for every row in one chunk.
uint64_t elementwise_tcm_bytes(EltOp op, uint32_t rows_per_chunk, uint32_t d, const TargetModel& t);

Result<Program> lower_elementwise(EltOp op, uint32_t n, uint32_t d, const TargetModel& t, float eps = 1e-5f,
                                  TcmWindow window = {});

}  // namespace tandem::npu::oplib
