// The bridge from the dialects' string attributes to the runtime operator library's matmul spec
// (npu/oplib/matmul.h): the compiler prices and emits matmuls with the same code the runtime uses.
#pragma once

#include <optional>

#include "llvm/ADT/StringRef.h"
#include "npu/oplib/matmul.h"

namespace tandem::ir {

// "f16", "q8_0", "q4_0" -> the DType (nullopt for anything else).
std::optional<DType> weightFormat(llvm::StringRef format);
// "weight_stationary" = the library's naive order (the array holds weight tiles);
// "activation_stationary" = exchanged (the array holds activation tiles, weights stream).
tandem::npu::oplib::MatmulOrder matmulOrder(llvm::StringRef dataflow);
llvm::StringRef dataflowName(tandem::npu::oplib::MatmulOrder order);

tandem::npu::oplib::MatmulSpec matmulSpec(int64_t rows, int64_t in, int64_t out, DType format, llvm::StringRef dataflow,
                                          bool double_buffer = true, bool double_buffer_out = true);

// Cycles of the library's own blocking of `s` on `t` (the cost model's price of a linear before
// tiling is searched); nullopt when the library cannot block it on this target.
std::optional<double> libraryCycles(const tandem::npu::oplib::MatmulSpec& s, const tandem::npu::TargetModel& t);

}  // namespace tandem::ir
