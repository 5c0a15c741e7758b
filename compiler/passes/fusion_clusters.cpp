// llm-fusion-clusters: the fusion-cluster search on the llm ops of each function.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "npu/fusion/clustering.h"
#include "passes/Passes.h"
#include "passes/tensor_bytes.h"
#include "passes/matmul_spec.h"
#include "passes/target_option.h"

namespace tandem::ir {
#define GEN_PASS_DEF_LLMFUSIONCLUSTERS
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

namespace fz = tandem::npu::fusion;
using tandem::npu::VecOp;

uint64_t elements(Value v) { return uint64_t(llvm::cast<RankedTensorType>(v.getType()).getNumElements()); }
int64_t dim(Value v, unsigned i) { return llvm::cast<RankedTensorType>(v.getType()).getDimSize(i); }

// One llm op's work, from the same constructors the layer model uses.
fz::FusionOp describe(Operation* op, const tandem::npu::TargetModel& t) {
  const std::string name = op->getName().getStringRef().drop_front(4).str();
  if (auto l = dyn_cast<llm::LinearOp>(op))
    return fz::linear_op(t, name, uint64_t(dim(l.getInput(), 0)), uint64_t(dim(l.getInput(), 1)),
                         uint64_t(dim(l.getWeight(), 0)), *weightFormat(l.getQuant()));
  if (auto a = dyn_cast<llm::AttentionOp>(op))
    return fz::attention_op(t, name, uint64_t(dim(a.getQuery(), 0)), uint64_t(dim(a.getKeys(), 0)), a.getNumHeads(),
                            a.getNumKvHeads(), a.getHeadDim());
  if (isa<llm::RmsNormOp>(op)) return fz::vector_op(t, name, elements(op->getOperand(0)), {VecOp::kSumSq, VecOp::kRmsApply});
  if (isa<llm::RopeOp>(op)) return fz::vector_op(t, name, elements(op->getOperand(0)), {VecOp::kMul, VecOp::kMul, VecOp::kAdd});
  if (isa<llm::SwigluOp>(op)) return fz::vector_op(t, name, elements(op->getOperand(0)), {VecOp::kSwiglu});
  if (isa<llm::GegluOp>(op))  // as the layer model prices it (npu/fusion/fusion_graph.cpp)
    return fz::vector_op(t, name, elements(op->getOperand(0)),
                         {VecOp::kMul, VecOp::kMul, VecOp::kAdd, VecOp::kScale, VecOp::kSwiglu});
  if (isa<llm::AddOp>(op)) return fz::vector_op(t, name, elements(op->getOperand(0)), {VecOp::kAdd});
  if (auto kv = dyn_cast<llm::KvAppendOp>(op)) {  // a store of the new rows into the cache
    fz::FusionOp f = fz::vector_op(t, name, 0, {});
    f.out_bytes = tensorBytes(kv.getRows());
    f.output = true;
    return f;
  }
  // Anything else (sampling, an unexpanded mlp): a pass over its input on the vector unit.
  return fz::vector_op(t, name, elements(op->getOperand(0)), {VecOp::kAdd});
}

struct FusionClusters : impl::LlmFusionClustersBase<FusionClusters> {
  using LlmFusionClustersBase::LlmFusionClustersBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    auto budget = budgetBytes(tcmBudget, *target, getOperation());
    if (failed(budget)) return signalPassFailure();
    if (partitioner != "search" && partitioner != "naive" && partitioner != "library" && partitioner != "local" &&
        partitioner != "mega") {
      getOperation().emitError() << "partitioner must be search, naive, library, local or mega, got '" << partitioner << "'";
      return signalPassFailure();
    }
    if (powerCap < 0) {
      getOperation().emitError() << "power-cap must be >= 0";
      return signalPassFailure();
    }
    auto* llmDialect = getContext().getLoadedDialect<llm::LlmDialect>();
    Builder b(&getContext());
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      llvm::SmallVector<Operation*> ops;
      llvm::DenseMap<Operation*, int> index;
      fz::FusionGraph g;
      for (Operation& op : f.getBody().front()) {
        if (op.getDialect() != llmDialect) continue;
        fz::FusionOp fop = describe(&op, *target);
        for (Value in : op.getOperands()) {
          if (Operation* def = in.getDefiningOp(); def && index.count(def)) {
            fop.inputs.push_back(index[def]);
          } else if (auto arg = llvm::dyn_cast<BlockArgument>(in); arg && fop.kind != "linear") {
            // Activations from outside (weights are priced inside linear_op); one read per argument.
            if (auto rt = llvm::dyn_cast<RankedTensorType>(arg.getType()); rt && rt.hasStaticShape()) {
              fop.ext_in_bytes += tensorBytes(arg);
              fop.ext_in_key = "arg" + std::to_string(arg.getArgNumber());
            }
          }
        }
        for (Operation* user : op.getUsers())
          if (isa<func::ReturnOp>(user)) fop.output = true;
        index[&op] = int(g.ops.size());
        ops.push_back(&op);
        g.ops.push_back(std::move(fop));
      }
      if (g.ops.empty()) continue;
      fz::ClusteringOptions po;
      po.cluster.tcm_bytes = *budget;
      po.power_cap_w = powerCap;
      fz::Clustering p = partitioner == "search"  ? fz::search_partition(g, *target, po)
                        : partitioner == "naive" ? fz::naive_partition(g, *target, po)
                        : partitioner == "library" ? fz::operator_library(g, *target, po.cluster)
                        : partitioner == "local" ? fz::local_fusion(g, *target, po.cluster)
                                                 : fz::mega_fusion(g, *target, po.cluster);
      for (size_t k = 0; k < p.starts.size(); ++k) {
        const size_t end = k + 1 < p.starts.size() ? p.starts[k + 1] : ops.size();
        for (size_t i = p.starts[k]; i < end; ++i) ops[i]->setAttr("cluster", b.getI64IntegerAttr(int64_t(k)));
      }
      f->setAttr("fusion.strategy", b.getStringAttr(partitioner.getValue()));
      f->setAttr("fusion.clusters", b.getI64IntegerAttr(int64_t(p.starts.size())));
      f->setAttr("fusion.seconds", b.getF64FloatAttr(p.seconds));
      f->setAttr("fusion.external_bytes", b.getI64IntegerAttr(int64_t(p.external_bytes)));
      f->setAttr("fusion.peak_power_w", b.getF64FloatAttr(p.peak_power_w));
    }
  }
};

}  // namespace
}  // namespace tandem::ir
