#include "runtime/graph_forward.h"

#include <algorithm>
#include <chrono>

namespace tandem {

Result<std::unique_ptr<GraphForward>> GraphForward::create(std::shared_ptr<const Model> model,
                                                           std::unique_ptr<devices::Device> device, int context,
                                                           int max_batch) {
  std::unique_ptr<GraphForward> g(new GraphForward());
  const ModelConfig& c = model->config();
  if (context <= 0) context = std::min(c.context_length, 4096);
  max_batch = std::max(1, std::min(max_batch, context));
  graph::BufferPlan plan(g->memory_, c, max_batch, context);
  TANDEM_RETURN_IF_ERROR(g->memory_.allocate());
  g->buffers_ = plan.bind(g->memory_);
  // Unified memory: the device maps the whole pool once; no op copies anything.
  TANDEM_RETURN_IF_ERROR(device->map_shared_memory(g->memory_.get(0), g->memory_.total_bytes()));
  g->model_ = std::move(model);
  g->device_ = std::move(device);
  return g;
}

Status GraphForward::eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits) {
  const ModelConfig& c = model_->config();
  if (tokens.empty()) return InvalidArgument("eval: no tokens");
  if (n_past < 0 || size_t(n_past) + tokens.size() > size_t(buffers_.context)) {
    return OutOfRange("eval: positions exceed the context of " + std::to_string(buffers_.context) + " tokens");
  }
  for (size_t done = 0; done < tokens.size();) {
    const int n = int(std::min(tokens.size() - done, size_t(buffers_.max_batch)));
    const bool last = done + size_t(n) == tokens.size();
    float* out = all_logits ? logits + done * size_t(c.n_vocab) : (last ? logits : nullptr);
    graph::prepare_chunk(c, buffers_, tokens.data() + done, n, n_past + int(done));
    for (const devices::OpCall& op : graph::build_forward(*model_, buffers_, n, n_past + int(done), out, all_logits)) {
      if (!device_->supports(op)) {
        return Unsupported(device_->name() + ": cannot run " + op.describe());
      }
      const auto t0 = std::chrono::steady_clock::now();
      TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<devices::Completion> done_op, device_->submit(op));
      TANDEM_RETURN_IF_ERROR(done_op->wait());
      usage_.tasks++;
      usage_.busy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      usage_.device_seconds += done_op->device_seconds();
    }
    done += size_t(n);
  }
  return Status::Ok();
}

ExecutionReport GraphForward::execution_report() const {
  ExecutionReport r = report_with_pool("op graph on " + device_->name(), memory_);
  r.device_bytes_copied = device_->bytes_copied();
  r.tasks = usage_.tasks;
  r.devices[device_->name()] = usage_;
  return r;
}

}  // namespace tandem
