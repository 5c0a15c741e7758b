// Differential validation of an elementwise program (rmsnorm, swiglu, add): run it on the
// functional executor with random fp16 operands and compare against a double-precision reference.
// Used by the compiler (every variant of `tandem compile`) and by the tests.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "npu/oplib/elementwise.h"
#include "npu/program.h"

namespace tandem::npu::oplib {

struct ElementwiseCheck {
  double max_error_ratio = 0;  // max over outputs of |got - ref| / tolerance (<= 1 passes)
  uint64_t outputs_checked = 0;
  uint64_t failures = 0;       // outputs over their tolerance, or not finite
  bool wrote_past_output = false;  // bytes after y changed
  bool ok() const { return failures == 0 && !wrote_past_output; }
};

// `program` computes op over [n, d] (buffers as lower_elementwise declares them). Tolerance per
// output: 2^-9 of |ref| (an fp16 result's rounding plus the fp32 sums and exponentials before it)
// plus 1e-4 absolute.
Result<ElementwiseCheck> check_elementwise_program(const Program& program, EltOp op, uint32_t n, uint32_t d, float eps,
                                                   uint64_t seed, const TargetModel& t);

}  // namespace tandem::npu::oplib
