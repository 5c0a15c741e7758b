// state-to-tdma: tiling, double buffering (asymmetric when TCM is short) and the TCM buffers of
// every state.matmul, chosen by the tiling search on the shared cost model; an NPU rmsnorm and
// the matmuls of its fusion cluster that read it become one tdma.norm_linear; every KV append
// becomes page-sized DMA transfers through (double-buffered) staging buffers, ordered by events;
// every elementwise llm op on the NPU (rmsnorm, swiglu, add: no persistent state, so they pass the
// state level unchanged) becomes a tdma.vector_rows over a TCM region sized by the chunking search.
#include <cmath>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "npu/cost_model.h"
#include "npu/oplib/kv_cache.h"
#include "npu/oplib/norm_linear.h"
#include "passes/Passes.h"
#include "passes/matmul_spec.h"
#include "passes/target_option.h"
#include "passes/tiling_search.h"
#include "passes/vector_rows.h"

namespace tandem::ir {
#define GEN_PASS_DEF_STATETOTDMA
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

struct StateToTdmaPass : impl::StateToTdmaBase<StateToTdmaPass> {
  using StateToTdmaBase::StateToTdmaBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    auto budget = budgetBytes(tcmBudget, *target, getOperation());
    if (failed(budget)) return signalPassFailure();
    Buffering mode;
    if (buffering == "auto") mode = Buffering::kAuto;
    else if (buffering == "double") mode = Buffering::kDouble;
    else if (buffering == "single") mode = Buffering::kSingle;
    else {
      getOperation().emitError() << "buffering must be auto, double or single, got '" << buffering << "'";
      return signalPassFailure();
    }
    llvm::SmallVector<state::MatmulOp> matmuls;
    getOperation().walk([&](state::MatmulOp op) { matmuls.push_back(op); });
    llvm::SmallVector<state::KvWriteOp> writes;
    getOperation().walk([&](state::KvWriteOp op) { writes.push_back(op); });
    IRRewriter rw(&getContext());
    if (fuse) {
      llvm::SmallVector<llm::RmsNormOp> norms;
      getOperation().walk([&](llm::RmsNormOp op) {
        if (!op->hasAttr("fallback")) norms.push_back(op);
      });
      llvm::SmallPtrSet<Operation*, 16> fused;
      for (llm::RmsNormOp norm : norms) {
        llvm::SmallVector<state::MatmulOp> projections = fusable(norm);
        if (projections.empty()) continue;
        auto done = fuseNormLinear(norm, projections, *target, *budget, mode, rw);
        if (failed(done)) return signalPassFailure();
        if (*done)
          for (state::MatmulOp mm : projections) fused.insert(mm);
      }
      llvm::erase_if(matmuls, [&](state::MatmulOp op) { return fused.count(op); });
    }
    for (state::MatmulOp op : matmuls)
      if (failed(lower(op, *target, *budget, mode, rw))) return signalPassFailure();
    int kernels = 0;
    for (state::KvWriteOp op : writes)
      if (failed(lowerKv(op, *target, *budget, mode, kernels++, rw))) return signalPassFailure();
    llvm::SmallVector<Operation*> vectorOps;
    getOperation().walk([&](Operation* op) {
      if (eltOpOf(op) && !op->hasAttr("fallback")) vectorOps.push_back(op);
    });
    for (Operation* op : vectorOps)
      if (failed(lowerVector(op, *target, *budget, rw))) return signalPassFailure();
  }

  LogicalResult lowerVector(Operation* op, const tandem::npu::TargetModel& t, uint64_t budget, IRRewriter& rw) {
    const auto elt = *eltOpOf(op);
    auto a = llvm::cast<RankedTensorType>(op->getOperand(0).getType());
    const float eps = isa<llm::RmsNormOp>(op) ? float(cast<llm::RmsNormOp>(op).getEps().convertToDouble()) : 0.0f;
    auto choice = searchVectorRows(elt, uint32_t(a.getDimSize(0)), uint32_t(a.getDimSize(1)), eps, t, budget);
    if (!choice)
      return op->emitError() << "TCM overflow: one row of " << a.getDimSize(1) << " values needs "
                             << tandem::npu::oplib::elementwise_tcm_bytes(elt, 1, uint32_t(a.getDimSize(1)), t)
                             << " B, over the budget of " << budget << " B";
    rw.setInsertionPoint(op);
    auto region = rw.create<tdma::AllocOp>(op->getLoc(), rw.getIndexType(), rw.getI64IntegerAttr(int64_t(choice->bytes)),
                                           rw.getI64IntegerAttr(t.tcm.alignment_bytes), rw.getStringAttr("rows"),
                                           IntegerAttr());
    auto rows = rw.create<tdma::VectorRowsOp>(
        op->getLoc(), op->getResult(0).getType(), rw.getStringAttr(tandem::npu::oplib::elt_op_name(elt)),
        op->getOperand(0), op->getOperand(1), region, rw.getF32FloatAttr(eps),
        rw.getI64IntegerAttr(choice->rows_per_chunk), rw.getF64FloatAttr(choice->cycles));
    if (auto phase = op->getAttr("phase")) rows->setAttr("phase", phase);
    rw.replaceOp(op, rows.getResult());
    return success();
  }

  // A KV append, page by page: load the page's new rows into a staging buffer (event 0/1), then
  // store them into the cache in its layout (event 2/3). With two staging buffers the next page
  // loads while this one is stored; a buffer is reused once the stores out of it completed.
  // Every op is tagged tdma.kernel (tdma-to-npu makes one program of them); the first transfer
  // carries the cache geometry (tdma.kv). Store offsets are relative to the appended position.
  LogicalResult lowerKv(state::KvWriteOp op, const tandem::npu::TargetModel& t, uint64_t budget, Buffering mode,
                        int index, IRRewriter& rw) {
    namespace oplib = tandem::npu::oplib;
    state::KvPagesOp pages = op.pages();
    auto cache = llvm::cast<RankedTensorType>(op.getCache().getType());
    oplib::KvGeometry g;
    g.capacity = uint32_t(cache.getDimSize(0));
    g.heads = uint32_t(pages.getHeads());
    g.head_dim = uint32_t(cache.getDimSize(1) / int64_t(pages.getHeads()));
    g.page_tokens = uint32_t(pages.getPageTokens());
    g.layout = *oplib::kv_layout_from_name(pages.getLayout());
    const uint32_t rows = uint32_t(llvm::cast<RankedTensorType>(op.getRows().getType()).getDimSize(0));
    const uint32_t page = std::min(rows, g.page_tokens), chunks = (rows + g.page_tokens - 1) / g.page_tokens;
    const uint64_t align = t.tcm.alignment_bytes;
    const uint64_t stage = (uint64_t(page) * g.row_bytes() + align - 1) / align * align;
    if (stage > budget)
      return op.emitError() << "TCM overflow: a page of " << page << " KV rows (" << stage << " B) does not fit the budget of "
                            << budget << " B; use smaller pages";
    const unsigned buffers = chunks > 1 && mode != Buffering::kSingle && 2 * stage <= budget ? 2 : 1;
    rw.setInsertionPoint(op);
    auto kernel = rw.getStringAttr("kv" + std::to_string(index));
    auto i64 = [&](int64_t v) { return rw.getI64IntegerAttr(v); };
    Value buf[2];
    for (unsigned b = 0; b < buffers; ++b)
      buf[b] = rw.create<tdma::AllocOp>(op.getLoc(), rw.getIndexType(), i64(int64_t(stage)), i64(int64_t(align)),
                                        rw.getStringAttr("kv_stage" + std::to_string(b)), IntegerAttr());
    auto wait = [&](int64_t event) { rw.create<tdma::DmaWaitOp>(op.getLoc(), i64(event))->setAttr("tdma.kernel", kernel); };
    auto start = [&](StringRef dir, Value tensor, Value b, uint64_t ddr, uint64_t ddrStride, uint32_t n, uint32_t bytes,
                     uint32_t tcm, uint32_t tcmStride, int64_t event) {
      auto d = rw.create<tdma::DmaStartOp>(op.getLoc(), rw.getStringAttr(dir), tensor, b, i64(int64_t(ddr)),
                                           i64(int64_t(ddrStride)), i64(n), i64(bytes), i64(tcmStride), i64(event), i64(tcm));
      d->setAttr("tdma.kernel", kernel);
      return d;
    };
    const tandem::npu::CostModel cost(t);
    double loadCycles = 0, storeCycles = 0;  // of one full page
    tdma::DmaStartOp first;
    for (uint32_t c = 0; c < chunks; ++c) {
      const unsigned b = c % buffers;
      const uint32_t from = c * g.page_tokens, n = std::min(g.page_tokens, rows - from);
      const uint32_t bytes = uint32_t(n * g.row_bytes());
      if (c >= buffers) wait(2 + b);  // the stores out of this buffer have drained
      auto load = start("load", op.getRows(), buf[b], from * g.row_bytes(), bytes, 1, bytes, 0, bytes, b);
      if (!first) first = load;
      wait(b);
      if (c == 0) loadCycles = cost.dma_cycles(1, bytes);
      for (const oplib::KvTransfer& s : oplib::kv_store_transfers(g, from, n)) {
        start("store", op.getCache(), buf[b], s.ddr_offset, s.ddr_stride, s.rows, s.row_bytes, s.tcm_offset, s.tcm_stride, 2 + b);
        if (c == 0) storeCycles += cost.dma_cycles(s.rows, s.row_bytes);
      }
    }
    for (unsigned b = 0; b < buffers; ++b) wait(2 + b);
    const double est = tandem::npu::CostModel::pipelined_cycles(loadCycles, 0, storeCycles, chunks, buffers == 2);
    first->setAttr("tdma.kv", rw.getDictionaryAttr({
        rw.getNamedAttr("capacity", i64(g.capacity)),
        rw.getNamedAttr("heads", i64(g.heads)),
        rw.getNamedAttr("head_dim", i64(g.head_dim)),
        rw.getNamedAttr("page_tokens", i64(g.page_tokens)),
        rw.getNamedAttr("layout", pages.getLayoutAttr()),
        rw.getNamedAttr("rows", i64(rows)),
        rw.getNamedAttr("phase", op.getPhaseAttr()),
        rw.getNamedAttr("est_cycles", rw.getF64FloatAttr(est)),
    }));
    // The stores wrote the cache in place: later readers read the cache itself.
    rw.replaceOp(op, op.getCache());
    return success();
  }

  // The TCM buffers of a tiled matmul schedule, in tdma.matmul_tiles order.
  static llvm::SmallVector<Value> allocMatmulBuffers(Location loc, const TilingChoice& choice,
                                                     const tandem::npu::TargetModel& t, IRRewriter& rw) {
    const auto bytes = tandem::npu::oplib::matmul_buffer_bytes(choice.spec, choice.plan);
    llvm::SmallVector<Value> buffers;
    auto alloc = [&](uint64_t n, StringRef role) {
      buffers.push_back(rw.create<tdma::AllocOp>(loc, rw.getIndexType(), rw.getI64IntegerAttr(int64_t(n)),
                                                 rw.getI64IntegerAttr(t.tcm.alignment_bytes), rw.getStringAttr(role),
                                                 IntegerAttr()));
    };
    alloc(bytes.x, "x");
    alloc(bytes.y, "y0");
    if (choice.spec.double_buffer_out) alloc(bytes.y, "y1");
    alloc(bytes.w, "w0");
    if (choice.spec.double_buffer) alloc(bytes.w, "w1");
    if (bytes.u > 0) {
      alloc(bytes.u, "u0");
      if (choice.spec.double_buffer) alloc(bytes.u, "u1");
    }
    return buffers;
  }

  // The matmuls an NPU rmsnorm fuses with: every user of the norm is a state.matmul of the norm's
  // fusion cluster, all of one format and dataflow, and every reader of their results comes after
  // the last of them (where the fused op goes). Empty: the norm stays its own kernel.
  static llvm::SmallVector<state::MatmulOp> fusable(llm::RmsNormOp norm) {
    Attribute cluster = norm->getAttr("cluster");
    if (!cluster) return {};
    llvm::SmallVector<state::MatmulOp> mms;
    for (Operation* user : norm.getResult().getUsers()) {
      auto mm = dyn_cast<state::MatmulOp>(user);
      if (!mm || mm->getAttr("cluster") != cluster || mm.getInput() != norm.getResult() ||
          mm->getBlock() != norm->getBlock())
        return {};
      if (llvm::is_contained(mms, mm)) continue;
      if (!mms.empty() && (mm.getFormat() != mms.front().getFormat() || mm.getOrder() != mms.front().getOrder() ||
                           mm.getTile() != mms.front().getTile()))
        return {};
      mms.push_back(mm);
    }
    if (mms.empty()) return {};
    llvm::sort(mms, [](state::MatmulOp a, state::MatmulOp b) { return a->isBeforeInBlock(b); });
    Operation* last = mms.back();
    for (state::MatmulOp mm : mms)
      for (Operation* user : mm.getResult().getUsers()) {
        Operation* at = last->getBlock()->findAncestorOpInBlock(*user);
        if (!at || !last->isBeforeInBlock(at)) return {};
      }
    return mms;
  }

  // One tdma.norm_linear for `norm` and its projections, tiled for the widest projection in the
  // budget the norm's gain row and scalar slot leave. false (nothing changed) when no tiling fits
  // or the cost model prices the ops apart lower: they are then lowered one by one.
  FailureOr<bool> fuseNormLinear(llm::RmsNormOp norm, llvm::ArrayRef<state::MatmulOp> mms, const tandem::npu::TargetModel& t,
                                 uint64_t budget, Buffering mode, IRRewriter& rw) {
    namespace oplib = tandem::npu::oplib;
    state::MatmulOp first = mms.front(), last = mms.back();
    if (int64_t(first.getTile()) != t.matrix.tile_dim) return false;  // lower() reports it
    auto x = llvm::cast<RankedTensorType>(norm.getInput().getType());
    oplib::NormLinearSpec s;
    s.base = matmulSpec(x.getDimSize(0), x.getDimSize(1), 1, *weightFormat(first.getFormat()), first.getOrder());
    for (state::MatmulOp mm : mms) s.outs.push_back(uint32_t(mm.getOut()));
    s.eps = float(norm.getEps().convertToDouble());
    const auto prologue = oplib::norm_prologue_bytes(s.base.in, t);
    if (prologue.gain + prologue.scalars >= budget) return false;
    std::string why;
    auto choice = searchTiling(s.widest(), t, budget - prologue.gain - prologue.scalars, powerCap, mode, why);
    if (!choice) return false;
    s.base = choice->spec;
    const auto& p = choice->plan;
    auto plan = oplib::block_norm_linear(s, t, p.nb, p.R, p.kc);
    if (!plan.ok()) return norm.emitError() << "cannot fuse with its projections: " << plan.status().message();
    // Fused only where the cost model says it pays: the shared blocking (sized for the widest
    // projection) can cost more than the traffic it saves, e.g. in decode, where X is one row.
    const double fusedCycles = oplib::estimate_norm_linear_cycles(s, *plan, t);
    auto rows = searchVectorRows(oplib::EltOp::kRmsNorm, s.base.n, s.base.in, s.eps, t, budget);
    if (rows) {
      double apart = rows->cycles;
      for (size_t i = 0; i < s.outs.size() && apart < fusedCycles; ++i) {
        auto own = searchTiling(matmulSpec(s.base.n, s.base.in, s.outs[i], s.base.wtype, first.getOrder()), t, budget,
                                powerCap, mode, why);
        apart += own ? own->cycles : INFINITY;
      }
      if (apart < fusedCycles) return false;
    }
    rw.setInsertionPoint(last);
    llvm::SmallVector<Value> buffers = allocMatmulBuffers(norm.getLoc(), *choice, t, rw);
    auto i64 = [&](int64_t v) { return rw.getI64IntegerAttr(v); };
    for (auto [bytes, role] : {std::pair<uint64_t, StringRef>{prologue.gain, "gain"}, {prologue.scalars, "norm_scalar"}})
      buffers.push_back(rw.create<tdma::AllocOp>(norm.getLoc(), rw.getIndexType(), i64(int64_t(bytes)),
                                                 i64(t.tcm.alignment_bytes), rw.getStringAttr(role), IntegerAttr()));
    llvm::SmallVector<Type> results;
    llvm::SmallVector<Value> packs;
    for (state::MatmulOp mm : mms) {
      results.push_back(mm.getResult().getType());
      packs.push_back(mm.getPack());
    }
    auto fusedOp = rw.create<tdma::NormLinearOp>(
        rw.getFusedLoc({norm.getLoc(), first.getLoc()}), results, norm.getInput(), norm.getGamma(), packs, buffers,
        norm.getEpsAttr(), first.getFormatAttr(), first.getOrderAttr(), i64(p.nb), i64(p.R), i64(p.kc),
        rw.getBoolAttr(choice->spec.double_buffer), rw.getBoolAttr(choice->spec.double_buffer_out),
        rw.getF64FloatAttr(fusedCycles));
    fusedOp->setAttr("phase", first.getPhaseAttr());
    fusedOp->setAttr("cluster", norm->getAttr("cluster"));
    fusedOp->setAttr("arrays", i64(oplib::matmul_arrays(choice->spec, t)));
    fusedOp->setAttr("est_power_w", rw.getF64FloatAttr(choice->power_w));
    for (auto [mm, result] : llvm::zip(mms, fusedOp.getResults())) rw.replaceOp(mm, result);
    rw.eraseOp(norm);
    return true;
  }

  LogicalResult lower(state::MatmulOp op, const tandem::npu::TargetModel& t, uint64_t budget, Buffering mode,
                      IRRewriter& rw) {
    if (int64_t(op.getTile()) != t.matrix.tile_dim)
      return op.emitError() << "packed for tile " << int64_t(op.getTile()) << " but target " << t.name << " has tile "
                            << t.matrix.tile_dim;
    auto x = llvm::cast<RankedTensorType>(op.getInput().getType());
    auto base = matmulSpec(x.getDimSize(0), x.getDimSize(1), int64_t(op.getOut()), *weightFormat(op.getFormat()),
                           op.getOrder());
    std::string why;
    if (powerCap < 0) return op.emitError() << "power-cap must be >= 0, got " << double(powerCap);
    auto choice = searchTiling(base, t, budget, powerCap, mode, why);
    if (!choice) return op.emitError() << "cannot tile for " << t.name << ": " << why;
    const auto& p = choice->plan;
    rw.setInsertionPoint(op);
    llvm::SmallVector<Value> buffers = allocMatmulBuffers(op.getLoc(), *choice, t, rw);
    auto tiles = rw.create<tdma::MatmulTilesOp>(
        op.getLoc(), op.getResult().getType(), op.getInput(), op.getPack(), buffers, op.getFormatAttr(),
        op.getOrderAttr(), rw.getI64IntegerAttr(p.nb), rw.getI64IntegerAttr(p.R), rw.getI64IntegerAttr(p.kc),
        rw.getBoolAttr(choice->spec.double_buffer), rw.getBoolAttr(choice->spec.double_buffer_out),
        rw.getF64FloatAttr(choice->cycles));
    tiles->setAttr("phase", op.getPhaseAttr());
    tiles->setAttr("arrays", rw.getI64IntegerAttr(tandem::npu::oplib::matmul_arrays(choice->spec, t)));
    tiles->setAttr("est_power_w", rw.getF64FloatAttr(choice->power_w));
    rw.replaceOp(op, tiles.getResult());
    return success();
  }
};

}  // namespace
}  // namespace tandem::ir
