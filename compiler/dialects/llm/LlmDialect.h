// The llm dialect (IR level 1: LLM semantics). Ops and their documentation: LlmOps.td.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/llm/LlmDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/llm/LlmOps.h.inc"

namespace tandem::ir::llm {
// Rows (tokens) of an op's activation operand: the number that decides its phase.
int64_t activationRows(mlir::Operation* op);
}  // namespace tandem::ir::llm
