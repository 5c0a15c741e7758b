// Differential validation of a fused rmsnorm -> projections program (norm_linear.h): run it on the
// functional executor with random operands and compare every projection against a
// double-precision reference of rmsnorm followed by the matmul.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "npu/oplib/matmul_check.h"
#include "npu/oplib/norm_linear.h"
#include "npu/program.h"

namespace tandem::npu::oplib {

// Weights random in `source` format, gain N(1, 0.25); the first `valid_rows` rows of x random,
// the rest zero (a padded bucket). Tolerance: check_matmul_program's plus two fp16 roundings of
// the sum of |products| (the normalized row is rounded to fp16 in TCM; its fp32 scale).
// The result accumulates over the projections.
Result<MatmulCheck> check_norm_linear_program(const Program& program, const NormLinearSpec& spec, DType source,
                                              uint32_t valid_rows, uint64_t seed, const TargetModel& t,
                                              uint32_t max_rows_checked = 0);

}  // namespace tandem::npu::oplib
