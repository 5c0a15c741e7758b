// tandem-opt: the NPU compiler's passes and dialects on MlirOptMain (for lit tests and for
// looking at any level of the lowering by hand).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "passes/Passes.h"

int main(int argc, char** argv) {
  mlir::registerTransformsPasses();  // canonicalize, cse, ...
  tandem::ir::registerTandemPasses();
  tandem::ir::registerNpuPipeline();
  mlir::DialectRegistry registry;
  registry.insert<tandem::ir::llm::LlmDialect, tandem::ir::state::StateDialect, tandem::ir::tdma::TdmaDialect,
                  tandem::ir::npu::NpuDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "tandem NPU compiler driver\n", registry));
}
