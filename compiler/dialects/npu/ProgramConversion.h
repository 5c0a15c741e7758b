// The emitter between the npu dialect and the npu device's Program (src/npu/program.h): one op
// per instruction in both directions, so a program survives IR -> Program -> IR unchanged.
#pragma once

#include <string>

#include "dialects/npu/NpuDialect.h"
#include "mlir/IR/Builders.h"
#include "npu/program.h"

namespace tandem::ir::npu {

// Builds `npu.program @<p.name>` at the builder's insertion point.
ProgramOp buildProgramOp(mlir::OpBuilder& b, mlir::Location loc, const tandem::npu::Program& p);

// The Program an npu.program denotes; fails (with a diagnostic on the op) on a field that does not
// fit the Program format (negative or over-wide numbers).
mlir::FailureOr<tandem::npu::Program> toProgram(ProgramOp op);

}  // namespace tandem::ir::npu
