// tdma-allocate-tcm: places every TCM buffer. A buffer lives from its tdma.alloc to its last use
// (operators run in program order, so live ranges are intervals of the op sequence); buffers are
// placed first fit, lowest address, among those live at the same time. A buffer that fits nowhere
// under the budget is an error naming it, its size, the budget and everything live beside it.
#include <algorithm>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "passes/Passes.h"
#include "passes/target_option.h"

namespace tandem::ir {
#define GEN_PASS_DEF_TDMAALLOCATETCM
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

struct Placed {
  tdma::AllocOp op;
  uint64_t offset, bytes, end;  // end: position of the last use
};

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct AllocateTcm : impl::TdmaAllocateTcmBase<AllocateTcm> {
  using TdmaAllocateTcmBase::TdmaAllocateTcmBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    auto budget = budgetBytes(tcmBudget, *target, getOperation());
    if (failed(budget)) return signalPassFailure();
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (failed(allocate(f, *budget))) return signalPassFailure();
  }

  LogicalResult allocate(func::FuncOp f, uint64_t budget) {
    // Program order positions of every op of the function.
    llvm::DenseMap<Operation*, uint64_t> pos;
    uint64_t n = 0;
    f.walk<WalkOrder::PreOrder>([&](Operation* op) { pos[op] = n++; });
    std::vector<Placed> live;
    uint64_t peak = 0;
    LogicalResult result = success();
    f.walk([&](tdma::AllocOp a) {
      if (failed(result)) return;
      const uint64_t start = pos[a];
      uint64_t end = start;
      for (Operation* user : a->getUsers())  // a use inside a region keeps the buffer live to the region's end
        if (Operation* top = a->getBlock()->findAncestorOpInBlock(*user)) end = std::max(end, pos[top]);
      // Buffers whose last use is before this alloc are free again.
      live.erase(std::remove_if(live.begin(), live.end(), [&](const Placed& p) { return p.end < start; }), live.end());
      std::sort(live.begin(), live.end(), [](const Placed& x, const Placed& y) { return x.offset < y.offset; });
      const uint64_t bytes = a.getBytes(), align = a.getAlignment();
      uint64_t at = 0;
      for (const Placed& p : live) {
        if (alignUp(at, align) + bytes <= p.offset) break;
        at = std::max(at, p.offset + p.bytes);
      }
      at = alignUp(at, align);
      if (at + bytes > budget) {
        auto d = a.emitError() << "TCM overflow: buffer '" << a.getRole() << "' of " << bytes
                               << " B does not fit the budget of " << budget << " B; live beside it:";
        uint64_t used = 0;
        for (Placed p : live) {  // a copy: op accessors are not const
          d << " '" << p.op.getRole() << "' " << p.bytes << " B @" << p.offset << ";";
          used += p.bytes;
        }
        d << " (" << used << " B live). Tile smaller (state-to-tdma with this tcm-budget) or raise the budget";
        result = failure();
        return;
      }
      a.setOffsetAttr(IntegerAttr::get(IntegerType::get(&getContext(), 64), int64_t(at)));
      live.push_back({a, at, bytes, end});
      peak = std::max(peak, at + bytes);
    });
    if (succeeded(result)) f->setAttr("tdma.tcm_peak", IntegerAttr::get(IntegerType::get(&getContext(), 64), int64_t(peak)));
    return result;
  }
};

}  // namespace
}  // namespace tandem::ir
