// npu-export: each npu.program -> the device's Program, checked by the device's own verify()
// against the target, and written as <dir>/<name>.tnpu (the Program text format) when asked.
#include <fstream>

#include "dialects/npu/ProgramConversion.h"
#include "mlir/IR/BuiltinOps.h"
#include "passes/Passes.h"
#include "passes/target_option.h"

namespace tandem::ir {
#define GEN_PASS_DEF_NPUEXPORT
#include "passes/Passes.h.inc"
}  // namespace tandem::ir

using namespace mlir;

namespace tandem::ir {
namespace {

struct NpuExportPass : impl::NpuExportBase<NpuExportPass> {
  using NpuExportBase::NpuExportBase;

  void runOnOperation() override {
    const tandem::npu::TargetModel* target = loadTarget(targetPath, getOperation());
    if (!target) return signalPassFailure();
    for (auto prog : getOperation().getOps<npu::ProgramOp>()) {
      auto program = npu::toProgram(prog);
      if (failed(program)) return signalPassFailure();
      if (auto st = tandem::npu::verify(*program, *target); !st.ok()) {
        prog.emitError() << "fails the " << target->name << " device check: " << st.message();
        return signalPassFailure();
      }
      if (dir.empty()) continue;
      const std::string path = dir + "/" + program->name + ".tnpu";
      std::ofstream out(path, std::ios::binary);
      out << tandem::npu::to_text(*program);
      if (!out.good()) {
        prog.emitError() << "cannot write " << path;
        return signalPassFailure();
      }
    }
    // The IR is unchanged: the pass manager then skips re-verifying millions of instructions.
    markAllAnalysesPreserved();
  }
};

}  // namespace
}  // namespace tandem::ir
