// Elementwise llm ops (rmsnorm, swiglu, add) on the NPU's vector unit: which ops they are, and
// the chunking search of state-to-tdma (rows per chunk through one TCM region, priced by timing
// the operator library's program on the shared cost model).
#pragma once

#include <cstdint>
#include <optional>

#include "mlir/IR/Operation.h"
#include "npu/oplib/elementwise.h"
#include "npu/target_model.h"

namespace tandem::ir {

// The library op an llm op lowers to, or nullopt.
std::optional<tandem::npu::oplib::EltOp> eltOpOf(mlir::Operation* op);

struct VectorRowsChoice {
  uint32_t rows_per_chunk = 0;
  uint64_t bytes = 0;  // the TCM region
  double cycles = 0;   // timed on the executor's cost model
};

// The fastest chunking whose region fits `budget` bytes (ties: the smaller region); nullopt when
// not even one row fits.
std::optional<VectorRowsChoice> searchVectorRows(tandem::npu::oplib::EltOp op, uint32_t n, uint32_t d, float eps,
                                                 const tandem::npu::TargetModel& t, uint64_t budget);

}  // namespace tandem::ir
