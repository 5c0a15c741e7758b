// The tdma dialect (IR level 3: tiles, TCM buffers, DMA, events). Ops: TdmaOps.td.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/tdma/TdmaDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/tdma/TdmaOps.h.inc"
