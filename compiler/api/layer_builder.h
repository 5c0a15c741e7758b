// Builds one decoder layer as an llm-dialect function with OpBuilder, from graph::build_forward's
// op list (see layer_ir.h). Internal to the compiler: MLIR types.
#pragma once

#include <string>
#include <string_view>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "model/arch.h"

namespace tandem::compiler {

// A module holding func @layer_<phase>_<rows>; null with *error set when the layer cannot be
// expressed (an op the llm dialect has no form for, a storage format it does not know).
mlir::OwningOpRef<mlir::ModuleOp> build_decoder_layer(mlir::MLIRContext& ctx, const ModelConfig& c, int rows,
                                                     std::string_view phase, std::string_view quant, std::string* error);

}  // namespace tandem::compiler
