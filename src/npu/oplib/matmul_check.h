// Differential validation of a matmul program: run it on the functional executor with random
// operands and compare against a double-precision reference. Used by the compiler (every variant
// of `tandem compile` is checked before it enters the cache) and by the tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/status.h"
#include "npu/oplib/matmul.h"
#include "npu/program.h"

namespace tandem::npu::oplib {

struct MatmulCheck {
  double max_error_ratio = 0;  // max over checked outputs of |got - ref| / tolerance (<= 1 passes)
  uint64_t outputs_checked = 0;
  uint64_t failures = 0;       // outputs over their tolerance, or not finite
  bool padding_untouched = true;  // rows past valid_rows produced zeros (padding rows are zero input)
  bool ok() const { return failures == 0 && padding_untouched; }
};

// Random N(0, 0.5) weights stored as `out` GGUF rows of `source` (f16, q8_0, q4_0); `deq` gets what
// those rows mean ([out][in] floats, after the format's rounding).
Result<std::vector<uint8_t>> random_weight_rows(DType source, uint32_t out, uint32_t in, std::mt19937_64& rng,
                                                std::vector<float>& deq);

// Compares y [n][out] with x [n][in] (the exact inputs the arrays saw, as doubles) times deq^T;
// tolerance as check_matmul_program's plus `extra_roundings` fp16 roundings of the sum of
// |products|. Rows past valid_rows must be zero. Accumulates into c.
void compare_with_reference(const std::vector<fp16_t>& y, const std::vector<double>& x, const std::vector<float>& deq,
                            uint32_t n, uint32_t in, uint32_t out, uint32_t valid_rows, uint32_t max_rows_checked,
                            double extra_roundings, MatmulCheck& c);

// `program` computes spec (x [spec.n, spec.in] fp16, weight pack of spec.wtype, y [spec.n, spec.out]);
// the weights are random in `source` format (packed with pack_weights_from). The first
// `valid_rows` rows of x are random, the rest zero: a length bucket padded up to spec.n rows.
// Tolerance per output: one fp16 rounding per 32-wide in-tile on the sum of |products| (the
// arrays round their fp32 accumulator to fp16 once per tile op) plus one for the result.
// max_rows_checked > 0 compares only that many valid rows against the reference (the first, the
// last and evenly spaced ones between: big buckets); every padding row is still checked.
Result<MatmulCheck> check_matmul_program(const Program& program, const MatmulSpec& spec, DType source,
                                         uint32_t valid_rows, uint64_t seed, const TargetModel& t,
                                         uint32_t max_rows_checked = 0);

}  // namespace tandem::npu::oplib
