#include "runtime/graph_forward.h"

#include <chrono>
#include <optional>

#include "devices/registry.h"

namespace tandem {

Result<std::unique_ptr<GraphForward>> GraphForward::create(std::shared_ptr<const Model> model,
                                                           std::unique_ptr<devices::Device> device, int context,
                                                           int max_batch, KvTypes kv, int n_sequences) {
  if (!model) return InvalidArgument("forward: no model");
  if (!device) return InvalidArgument("forward: no device");
  TANDEM_ASSIGN_OR_RETURN(ForwardShape shape, ForwardShape::resolve(model->config(), context, max_batch));
  std::unique_ptr<GraphForward> g(new GraphForward(std::move(model)));
  TANDEM_ASSIGN_OR_RETURN(KvGeometry cache, graph::kv_cache_geometry(g->model_->config(), shape.context, kv.k, kv.v));
  if (n_sequences < 1 || n_sequences > 256) {
    return InvalidArgument("sequences: " + std::to_string(n_sequences) + " is out of range (1..256)");
  }
  graph::BufferPlan plan(g->memory_, g->model_->config(), shape.max_batch, shape.context, 0, cache, n_sequences);
  g->kv_note_ = graph::describe_kv(
      cache, n_sequences > 1 ? "one cache for each of " + std::to_string(n_sequences) + " sequences" : "");
  TANDEM_RETURN_IF_ERROR(g->memory_.allocate());
  g->buffers_ = plan.bind(g->memory_);
  TANDEM_RETURN_IF_ERROR(device->map_shared_memory(g->memory_.get(0), g->memory_.total_bytes()));
  g->one_job_projections_ = device->caps().one_job_projections;
  g->device_ = std::move(device);
  return g;
}

namespace {
// On a device that runs a norm_linear's projections as one job: an rmsnorm and the whole-weight
// matmuls right after it that read what it writes (q, k, v; gate, up) as one norm_linear, which
// may write the norm's output as the unfused ops do. `used` says how many ops it stands for.
std::optional<graph::OpCall> fuse_projections(const std::vector<graph::OpCall>& ops, size_t i, size_t& used) {
  const graph::OpCall& norm = ops[i];
  if (norm.kind != graph::OpKind::kRmsNorm || norm.out.data == norm.a.data) return std::nullopt;
  graph::OpCall fused = norm;
  fused.kind = graph::OpKind::kNormLinear;
  fused.n_proj = 0;
  for (size_t j = i + 1; j < ops.size() && fused.n_proj < graph::OpCall::kMaxProjections; ++j) {
    const graph::OpCall& p = ops[j];
    if (p.kind != graph::OpKind::kMatmul || p.a.data != norm.out.data || p.a.ld != norm.out.ld ||
        p.a.rows != norm.out.rows || p.row_begin != 0 || p.row_end != p.weight->rows)
      break;
    fused.proj[size_t(fused.n_proj++)] = {p.weight, p.out};
  }
  if (fused.n_proj < 2) return std::nullopt;
  used = size_t(1 + fused.n_proj);
  return fused;
}
}  // namespace

Status GraphForward::run_ops(const std::vector<graph::OpCall>& ops) {
  for (size_t i = 0; i < ops.size();) {
    size_t used = 1;
    std::optional<graph::OpCall> fused = one_job_projections_ ? fuse_projections(ops, i, used) : std::nullopt;
    const graph::OpCall& op = fused ? *fused : ops[i];
    i += used;
    const auto t0 = std::chrono::steady_clock::now();
    // submit() checks the call itself; supports() is asked only to say why one was refused.
    Result<std::unique_ptr<devices::Completion>> submitted = device_->submit(op);
    if (!submitted.ok()) {
      if (!device_->supports(op)) return Unsupported(device_->name() + ": cannot run " + op.describe());
      return submitted.status();
    }
    std::unique_ptr<devices::Completion> done = std::move(*submitted);
    TANDEM_RETURN_IF_ERROR(done->wait());
    usage_.tasks++;
    usage_.busy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    usage_.device_seconds += done->device_seconds();
  }
  return Status::Ok();
}

ExecutionReport GraphForward::execution_report() const {
  ExecutionReport r = report_with_pool("op graph on " + device_->name(), memory_);
  r.kv = kv_note_;
  r.kv_bytes = buffers_.kv_bytes;
  r.device_bytes_copied = devices::bytes_copied(*device_);
  r.device_bytes_converted = devices::bytes_converted(*device_);
  r.tasks = usage_.tasks;
  r.devices[device_->name()] = usage_;
  return r;
}

Result<std::unique_ptr<GraphForward>> make_cpu_forward(std::shared_ptr<const Model> model, CpuForwardOptions o,
                                                       KvTypes kv) {
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<devices::Device> cpu, devices::open_device("cpu", model, o.n_threads));
  return GraphForward::create(std::move(model), std::move(cpu), o.context, o.max_batch, kv, o.sequences);
}

}  // namespace tandem
