// Builds one decoder layer as an llm-dialect function with OpBuilder, from graph::build_forward's
// op list (see layer_ir.h). Internal to the compiler: MLIR types.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "model/arch.h"

namespace tandem::compiler {

// A linear compiled in another format than the layer's: its weight's row is not a multiple of
// the layer format's block.
struct FormatFallback {
  std::string weight;     // "blk.0.ffn_down.weight"
  std::string requested;  // "q4_0"
  std::string used;       // "f16"
  std::string reason;
};

// The format a linear reading rows of `cols` values is compiled in when `requested` is asked for:
// `requested`, or f16 where its block does not divide the row (what llama-quantize stores such a
// tensor as, so what the runtime asks the compile cache for). *block gets the requested block.
std::string linear_format(std::string_view requested, int64_t cols, int64_t* block);

// A module holding func @layer_<phase>_<rows>; null with *error set when the layer cannot be
// expressed (an op the llm dialect has no form for, a storage format it does not know). Linears
// whose row the format's block does not divide are compiled as f16, each listed in
// *format_fallbacks when given.
mlir::OwningOpRef<mlir::ModuleOp> build_decoder_layer(mlir::MLIRContext& ctx, const ModelConfig& c, int rows,
                                                     std::string_view phase, std::string_view quant, std::string* error,
                                                     std::vector<FormatFallback>* format_fallbacks = nullptr);

}  // namespace tandem::compiler
