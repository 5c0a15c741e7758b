// The npu dialect (IR level 4: target instructions). Ops: NpuOps.td.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/npu/NpuDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/npu/NpuOps.h.inc"
