// Operator library: the fused rmsnorm -> projections cluster (EdgeLLM-MLIR's norm + QKV / norm +
// gate/up cluster) at one static shape, lowered to an npu::Program.
//
//   Y_i[n, outs[i]] = rmsnorm(X, g) . W_i^T      X, Y_i fp16 row-major; W_i packed as for matmul
//
// Each n-block of X is loaded once and normalized in place in TCM on the vector unit; every
// projection's weight slabs then stream past it (the matmul schedule of matmul.h, projection after
// projection). The normalized X never goes back to DDR, and X is read from DDR once instead of
// once per projection.
// Program buffers: 0 "x" [n, in] fp16 (ro), 1 "g" [in] fp16 (ro), then the projections' weight
// packs "w0".."w<k-1>" (ro), then their outputs "y0".."y<k-1>" [n, outs[i]] fp16 (rw): the
// inputs first and the outputs last, as npu.launch binds them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "npu/oplib/matmul.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu::oplib {

struct NormLinearSpec {
  MatmulSpec base;             // n, in, weight format, order, buffering, arrays (base.out: unused)
  std::vector<uint32_t> outs;  // each projection's out dim, >= 1 projection
  float eps = 1e-5f;
  MatmulSpec projection(size_t i) const;  // base with out = outs[i]: the plain matmul it fuses
  MatmulSpec widest() const;              // the projection the shared slab / panel buffers are sized for
};

// TCM bytes of the prologue: the gain row and one aligned fp32 scalar slot (the vector unit is one
// in-order queue, so each row's sum of squares is consumed before the next row's overwrites it).
struct NormPrologueBytes {
  uint64_t gain = 0, scalars = 0;
};
NormPrologueBytes norm_prologue_bytes(uint32_t in, const TargetModel& t);
// block_matmul for the widest projection, the prologue's buffers packed after the matmul's.
Result<MatmulPlan> block_norm_linear(const NormLinearSpec& s, const TargetModel& t, uint32_t nb, uint32_t R, uint32_t kc);
Result<Program> emit_norm_linear(const NormLinearSpec& s, const MatmulPlan& p, const TargetModel& t);
// X loaded and normalized once per n-block, then each projection's slab pipeline (the plain
// matmul's estimate without its X loads).
double estimate_norm_linear_cycles(const NormLinearSpec& s, const MatmulPlan& p, const TargetModel& t);

}  // namespace tandem::npu::oplib
