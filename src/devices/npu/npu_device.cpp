#include "devices/npu/npu_device.h"

#include <vector>

#include "core/half.h"
#include "npu/executor.h"

namespace tandem::devices {

bool NpuDevice::weight_type_supported(DType t) {
  return t == DType::F16 || t == DType::Q8_0 || t == DType::Q4_0;
}

DeviceCaps NpuDevice::caps() const {
  return DeviceCaps{DeviceKind::kNpu, false, true, false,
                    "emulated NPU, target " + target_.name + ", static graphs only, fp16 compute"};
}

bool NpuDevice::supports(const OpCall& c) const {
  return c.kind == OpKind::kMatmul && validate_call(c).ok() && weight_type_supported(c.weight->type) &&
         graphs_.count(GraphSpec::of(c).key()) > 0;
}

Result<PrepareReport> NpuDevice::prepare(const GraphSpec& s) {
  if (s.kind != OpKind::kMatmul || !s.weight) {
    return Unsupported(std::string("npu: the operator library has no graph for ") + op_kind_name(s.kind));
  }
  if (!weight_type_supported(s.weight->type)) {
    return Unsupported("npu: weight '" + s.weight->name + "' is " + std::string(dtype_name(s.weight->type)) +
                       "; the NPU runs f16, q8_0 and q4_0 weights");
  }
  const std::string key = s.key();
  if (graphs_.count(key)) return PrepareReport{true, 0.0};
  npu::oplib::MatmulSpec spec;
  spec.n = uint32_t(s.m);
  spec.in = uint32_t(s.weight->cols);
  spec.out = uint32_t(s.row_end - s.row_begin);
  spec.wtype = s.weight->type;
  const uint8_t* rows = s.weight->data + size_t(s.row_begin) * s.weight->row_bytes();
  TANDEM_ASSIGN_OR_RETURN(npu::oplib::PreparedMatmul g,
                          npu::oplib::prepare_matmul(spec, target_, rows, size_t(spec.out) * s.weight->row_bytes()));
  const double cost = g.prepare_seconds;
  prepare_total_ += cost;
  graphs_.emplace(key, std::move(g));
  return PrepareReport{false, cost};
}

Result<std::unique_ptr<Completion>> NpuDevice::submit(const OpCall& c) {
  TANDEM_RETURN_IF_ERROR(validate_call(c));
  auto it = graphs_.find(GraphSpec::of(c).key());
  if (it == graphs_.end()) {
    return Unsupported("npu: no prepared graph for " + GraphSpec::of(c).key() +
                       " (the NPU runs static shapes only; prepare() it first)");
  }
  const npu::oplib::PreparedMatmul& g = it->second;
  const int64_t m = c.out.rows, in = c.weight->cols, out = c.row_end - c.row_begin;
  // The NPU computes in fp16: activations enter and results leave through fp16 staging.
  std::vector<fp16_t> x16(size_t(m * in)), y16(size_t(m * out));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < in; ++k) x16[size_t(i * in + k)] = f32_to_fp16(c.a.data[i * c.a.ld + k]);
  npu::Executor exec(target_);
  exec.bind_const(0, x16.data(), x16.size() * 2);
  exec.bind_const(1, g.weight_pack.data(), g.weight_pack.size());
  exec.bind(2, y16.data(), y16.size() * 2);
  auto report = exec.run(g.program);
  if (!report.ok()) return std::unique_ptr<Completion>(new FinishedCompletion(report.status(), 0.0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < out; ++r) c.out.data[i * c.out.ld + c.row_begin + r] = fp16_to_f32(y16[size_t(i * out + r)]);
  return std::unique_ptr<Completion>(new FinishedCompletion(Status::Ok(), report->seconds));
}

}  // namespace tandem::devices
