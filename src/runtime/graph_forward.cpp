#include "runtime/graph_forward.h"

#include <chrono>

#include "devices/registry.h"

namespace tandem {

Result<std::unique_ptr<GraphForward>> GraphForward::create(std::shared_ptr<const Model> model,
                                                           std::unique_ptr<devices::Device> device, int context,
                                                           int max_batch, KvTypes kv) {
  if (!model) return InvalidArgument("forward: no model");
  if (!device) return InvalidArgument("forward: no device");
  TANDEM_ASSIGN_OR_RETURN(ForwardShape shape, ForwardShape::resolve(model->config(), context, max_batch));
  std::unique_ptr<GraphForward> g(new GraphForward(std::move(model)));
  TANDEM_ASSIGN_OR_RETURN(KvGeometry cache, graph::kv_cache_geometry(g->model_->config(), shape.context, kv.k, kv.v));
  graph::BufferPlan plan(g->memory_, g->model_->config(), shape.max_batch, shape.context, 0, cache);
  g->kv_note_ = graph::describe_kv(cache, "");
  TANDEM_RETURN_IF_ERROR(g->memory_.allocate());
  g->buffers_ = plan.bind(g->memory_);
  TANDEM_RETURN_IF_ERROR(device->map_shared_memory(g->memory_.get(0), g->memory_.total_bytes()));
  g->device_ = std::move(device);
  return g;
}

Status GraphForward::run_ops(const std::vector<graph::OpCall>& ops) {
  for (const graph::OpCall& op : ops) {
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
  r.device_bytes_copied = device_->bytes_copied();
  r.device_bytes_converted = device_->bytes_converted();
  r.tasks = usage_.tasks;
  r.devices[device_->name()] = usage_;
  return r;
}

Result<std::unique_ptr<GraphForward>> make_cpu_forward(std::shared_ptr<const Model> model, CpuForwardOptions o,
                                                       KvTypes kv) {
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<devices::Device> cpu, devices::open_device("cpu", model, o.n_threads));
  return GraphForward::create(std::move(model), std::move(cpu), o.context, o.max_batch, kv);
}

}  // namespace tandem
