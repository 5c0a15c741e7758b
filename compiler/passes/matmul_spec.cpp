#include "passes/matmul_spec.h"

namespace tandem::ir {

namespace oplib = tandem::npu::oplib;

std::optional<DType> weightFormat(llvm::StringRef format) {
  if (format == "f16") return DType::F16;
  if (format == "q8_0") return DType::Q8_0;
  if (format == "q4_0") return DType::Q4_0;
  return std::nullopt;
}

// The verifiers admit only the two names, so an unknown one cannot reach here.
oplib::MatmulOrder matmulOrder(llvm::StringRef dataflow) {
  const Result<oplib::MatmulOrder> o = oplib::matmul_order_from_name(dataflow.str());
  return o.ok() ? *o : oplib::MatmulOrder::kActivationStationary;
}

llvm::StringRef dataflowName(oplib::MatmulOrder order) { return oplib::matmul_order_name(order); }

oplib::MatmulSpec matmulSpec(int64_t rows, int64_t in, int64_t out, DType format, llvm::StringRef dataflow,
                             bool double_buffer, bool double_buffer_out) {
  oplib::MatmulSpec s;
  s.n = uint32_t(rows);
  s.in = uint32_t(in);
  s.out = uint32_t(out);
  s.wtype = format;
  s.order = matmulOrder(dataflow);
  s.double_buffer = double_buffer;
  s.double_buffer_out = double_buffer_out;
  return s;
}

std::optional<double> libraryCycles(const oplib::MatmulSpec& s, const tandem::npu::TargetModel& t) {
  auto plan = oplib::plan_matmul(s, t);
  if (!plan.ok()) return std::nullopt;
  return oplib::estimate_matmul_cycles(s, *plan, t);
}

}  // namespace tandem::ir
