// Matrix multiplication against a weight stored in any GGUF type: the CPU device's hot loop.
//
// W4A16: the weight stays in its stored type (Q4_0 / Q8_0 blocks, f16, bf16, f32); kernels
// dequantize into fp32 registers (or a small per-thread panel reused across many activation rows
// in prefill) and multiply fp32 activations with fp32 accumulation. Activations are never
// quantized, so the only error against the fp64 reference is fp32 rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace tandem {
class ThreadPool;
}

namespace tandem::cpu {

// A weight matrix of `rows` output channels by `cols` inputs, row-major in `type`
// (GGUF layout: dims[0] = cols is contiguous). cols is a multiple of the type's block size.
struct WeightView {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;  // stride between rows
};

// y[i, r] = sum_k x[i, k] * W[r, k] for i < m, r < W.rows.
// x: m rows of W.cols floats, stride ldx; y: m rows, stride ldy (>= W.rows).
// m == 1 is decode (matrix-vector, memory bound); m > 1 is prefill (matrix-matrix, compute bound).
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t m, int64_t ldx, float* y,
            int64_t ldy);

// Which implementation matmul dispatches to on this CPU ("avx512", "avx2", "portable").
const char* matmul_isa();

// One row of W dequantized to fp32 (embedding lookup uses this).
void dequantize_row(const WeightView& w, int64_t row, float* out);

}  // namespace tandem::cpu
