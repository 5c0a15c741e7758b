#include "passes/vector_rows.h"

#include "dialects/llm/LlmDialect.h"
#include "npu/executor.h"

namespace tandem::ir {

namespace oplib = tandem::npu::oplib;

std::optional<oplib::EltOp> eltOpOf(mlir::Operation* op) {
  if (llvm::isa<llm::RmsNormOp>(op)) return oplib::EltOp::kRmsNorm;
  if (llvm::isa<llm::SwigluOp>(op)) return oplib::EltOp::kSwiglu;
  if (llvm::isa<llm::AddOp>(op)) return oplib::EltOp::kAdd;
  return std::nullopt;
}

std::optional<VectorRowsChoice> searchVectorRows(oplib::EltOp op, uint32_t n, uint32_t d, float eps,
                                                 const tandem::npu::TargetModel& t, uint64_t budget) {
  std::optional<VectorRowsChoice> best;
  tandem::npu::Executor timer(t);
  // Every row in one chunk, then halving: fewer, larger chunks pay fewer DMA setups; more,
  // smaller ones overlap more of the load, compute and store.
  for (uint32_t rc = n;; rc = (rc + 1) / 2) {
    const uint64_t bytes = oplib::elementwise_tcm_bytes(op, rc, d, t);
    if (bytes <= budget) {
      auto program = oplib::lower_elementwise(op, n, d, t, eps, {0, bytes});
      if (program.ok()) {
        auto timed = timer.run(*program, {false, true});
        if (timed.ok() && (!best || timed->total_cycles < best->cycles ||
                           (timed->total_cycles == best->cycles && bytes < best->bytes)))
          best = VectorRowsChoice{rc, bytes, timed->total_cycles};
      }
    }
    if (rc == 1) break;
  }
  return best;
}

}  // namespace tandem::ir
