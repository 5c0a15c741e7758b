// Bytes of a statically shaped tensor (0 for anything else): what a pass prices as DDR traffic
// or declares as a program buffer.
#pragma once

#include <cstdint>

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace tandem::ir {

inline uint64_t tensorBytes(mlir::Type type) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!t || !t.hasStaticShape()) return 0;
  return uint64_t(t.getNumElements()) * ((t.getElementTypeBitWidth() + 7) / 8);
}
inline uint64_t tensorBytes(mlir::Value v) { return tensorBytes(v.getType()); }

}  // namespace tandem::ir
