// The TargetModel a pass's `target` option names, loaded once per path per process.
#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "npu/target_model.h"

namespace tandem::ir {

// nullptr after emitting an error on `anchor` naming the file and the parse failure.
const tandem::npu::TargetModel* loadTarget(llvm::StringRef path, mlir::Operation* anchor);

// The TCM bytes a pass may use: the option, or the target's TCM when the option is 0. An option
// over the target's TCM or negative is an error.
mlir::FailureOr<uint64_t> budgetBytes(int64_t option, const tandem::npu::TargetModel& t, mlir::Operation* anchor);

}  // namespace tandem::ir
