// The state dialect (IR level 2: state and layout). Ops and their documentation: StateOps.td.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/state/StateDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/state/StateOps.h.inc"
