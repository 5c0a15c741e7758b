#include "runtime/hetero_forward.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "compile_cache/cache.h"
#include "devices/fault_injection.h"
#include "devices/registry.h"
#include "runtime/device_roles.h"

namespace tandem {

namespace {

struct KvChoice {
  KvGeometry pages{0, 1, 0, 0, KvLayout::kTokenMajor};  // capacity 0: the host's fp32 caches
  std::string why;                                       // for -v
  bool npu_owned = false;                                // fp16 pages the npu's appends write
};

// Where the KV lives. With a compile cache holding appends of this cache's shape, an f16 cache
// and the cpu in the GPU's role, the npu owns it: fp16 pages in the layout of the compiler's
// decode append (EdgeLLM-MLIR's state/layout level), written by those programs, and read by the
// cpu's attention. Otherwise the cache is what --cache-type-k/v ask for (kv_cache_geometry):
// typed token-major rows, or the host fp32 layout for f32, written and read where the ops run.
Result<KvChoice> choose_kv(const HeteroOptions& o, const ModelConfig& c, int context,
                           const std::map<std::string, std::unique_ptr<devices::Device>>& opened) {
  KvChoice kv;
  TANDEM_ASSIGN_OR_RETURN(kv.pages, graph::kv_cache_geometry(c, context, o.kv_types.k, o.kv_types.v));
  if (!o.npu_cache || o.partition.npu.empty()) {
    kv.why = graph::describe_kv(kv.pages, "");
    return kv;
  }
  const std::string shape = std::to_string(context) + " tokens x " + std::to_string(c.n_kv_heads) + " heads x " +
                            std::to_string(c.head_dim);
  const std::optional<KvGeometry> g =
      o.npu_cache->kv_pages_for(uint32_t(context), uint32_t(c.n_kv_heads), uint32_t(c.head_dim));
  if (!g) {
    kv.why = graph::describe_kv(kv.pages, "the compile cache holds no KV append for a cache of " + shape +
                                              " (tandem compile with this context)");
    return kv;
  }
  if (!kv.pages.fp16()) {
    kv.why = graph::describe_kv(kv.pages, "the compiled KV appends write fp16 (the npu owns an f16 cache only)");
    return kv;
  }
  const auto gpu = opened.find(o.partition.gpu);
  if (gpu == opened.end() || gpu->second->caps().kind != devices::DeviceKind::kCpu) {
    kv.why = graph::describe_kv(kv.pages, "attention runs on " + o.partition.gpu +
                                              ", which reads its own layout (the npu owns the KV beside the cpu: --devices npu or cpu,npu)");
    return kv;
  }
  kv.pages = *g;
  kv.npu_owned = true;
  kv.why = "npu-owned fp16 pages, " + std::string(kv_layout_name(g->layout)) + " (" + std::to_string(g->page_tokens) +
           "-token pages) as the compiler laid them out, " + shape + "; attention on " + o.partition.gpu + " reads them";
  return kv;
}

}  // namespace

Result<std::unique_ptr<HeteroForward>> HeteroForward::create(std::shared_ptr<const Model> model, HeteroOptions o) {
  if (!model) return InvalidArgument("forward: no model");
  const ModelConfig& c = model->config();
  TANDEM_ASSIGN_OR_RETURN(ForwardShape shape, ForwardShape::resolve(c, o.context, o.max_batch));
  std::unique_ptr<HeteroForward> h(new HeteroForward(model));
  // Injected faults (tests, drills) wrap the NPU: its graph builds or its runs fail.
  // Read first: a bad one is refused before any device opens or is profiled.
  std::string fault_text = o.npu_fault;
  std::string fault_source = "--npu-fault";
  if (const char* env = std::getenv("TANDEM_NPU_FAULT"); fault_text.empty() && env && *env) {
    fault_text = env;
    fault_source = "TANDEM_NPU_FAULT";
  }
  devices::FaultPlan faults;
  if (!fault_text.empty()) {
    TANDEM_ASSIGN_OR_RETURN(faults, devices::parse_fault_plan(fault_text, fault_source));
  }
  // Staging for padded NPU runs: the largest standard length by the widest row.
  const int64_t pad_rows = o.partition.standard_lengths.empty()
                               ? 1 : *std::max_element(o.partition.standard_lengths.begin(), o.partition.standard_lengths.end());
  const int64_t pad_cols = std::max({c.dim, c.q_dim(), c.ffn_dim});
  const size_t pad_x = h->memory_.reserve("npu padding in [L x width]", size_t(pad_rows * pad_cols) * sizeof(float), c.n_layers);
  const size_t pad_y = h->memory_.reserve("npu padding out [L x width]", size_t(pad_rows * pad_cols) * sizeof(float), c.n_layers);
  // The device set: names, opened and checked before any memory is laid out for them.
  std::vector<std::string> names = o.devices;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::erase(names, std::string());
  std::map<std::string, std::unique_ptr<devices::Device>> opened;
  for (const std::string& name : names) {
    TANDEM_ASSIGN_OR_RETURN(opened[name], devices::open_device(name, model, o.n_threads));
  }
  // Static-shape devices alone (an npu) cannot run the embedding, attention or any odd shape: the
  // cpu joins as the host that runs what they cannot, and the report says so.
  const bool any_shape = std::any_of(opened.begin(), opened.end(), [](const auto& d) { return d.second->caps().dynamic_shapes; });
  if (!any_shape && !opened.empty() && !opened.count("cpu")) {
    TANDEM_ASSIGN_OR_RETURN(opened["cpu"], devices::open_device("cpu", model, o.n_threads));
    names.push_back("cpu");
    std::string alone;
    for (const auto& [name, d] : opened)
      if (name != "cpu") alone += (alone.empty() ? "" : ",") + name;
    h->device_note_ = alone + " runs static graphs only: the cpu joined as the host for what it cannot run";
  }
  std::vector<std::pair<std::string, devices::DeviceKind>> kinds;
  for (const auto& [name, d] : opened) kinds.emplace_back(name, d->caps().kind);
  TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, assign_roles(kinds, "--devices"));
  roles.apply_to(o.partition);
  TANDEM_ASSIGN_OR_RETURN(const KvChoice kv, choose_kv(o, c, shape.context, opened));
  h->kv_note_ = kv.why;
  o.partition.npu_owns_kv = kv.npu_owned;
  // Slots hold the chunk padded up to the next standard length, so padding happens in place.
  graph::BufferPlan plan(h->memory_, c, shape.max_batch, shape.context,
                         slot_rows_for(shape.max_batch, o.partition.standard_lengths), kv.pages);
  if (o.choose_plan && !o.partition.npu.empty()) {
    std::map<std::string, devices::Device*> set;
    for (const auto& [name, d] : opened) set[name] = d.get();
    TANDEM_ASSIGN_OR_RETURN(h->plan_, o.choose_plan(set, roles));
    if (h->plan_.decider) o.partition.decider = h->plan_.decider;
  }
  // Fast sync: one cache line per device for the completion flag its kernels raise.
  const size_t flags = h->memory_.reserve("completion flags [device x 64 B]", names.size() * MemoryPool::kAlignment);
  TANDEM_RETURN_IF_ERROR(h->memory_.allocate());
  h->buffers_ = plan.bind(h->memory_);

  if ((faults.any() || o.npu_cache) && o.partition.npu.empty()) {
    return InvalidArgument(std::string(faults.any() ? fault_source + ": NPU faults" : "--npu-cache: compiled programs") +
                           " need an npu in the device set");
  }

  std::map<std::string, devices::Device*> raw;
  for (auto& [name, d] : opened) {
    if (name == o.partition.npu) {
      if (o.npu_cache) {
        devices::CompiledPrograms* programs = d->compiled_programs();
        if (!programs) return InvalidArgument("--npu-cache: " + name + " runs no compiled NPU programs");
        TANDEM_RETURN_IF_ERROR(programs->use_compile_cache(o.npu_cache));
      }
      if (faults.any()) d = std::make_unique<devices::FaultInjectingDevice>(std::move(d), faults);
      h->npu_ = d.get();
    }
    TANDEM_RETURN_IF_ERROR(d->map_shared_memory(h->memory_.get(0), h->memory_.total_bytes()));
    // A completion flag costs a kernel after every op; it is raised only where someone will poll
    // it (the driver waits blocking on a device that computes on every host core).
    if (o.sync == SyncMode::kFast && (o.poll_host_devices || !d->caps().computes_on_host_cores)) {
      auto* flag = reinterpret_cast<uint64_t*>(h->memory_.get_as<char>(flags) + raw.size() * MemoryPool::kAlignment);
      devices::CompletionFlags* flags_cap = d->completion_flags();
      if (flags_cap && flags_cap->use_completion_flag(flag)) h->flag_devices_.push_back(name);
    }
    raw[name] = d.get();
    h->devices_[name] = std::move(d);
  }
  devices::Device* npu = h->npu_;
  bool warned = false;
  HeteroForward* self = h.get();
  auto npu_can_run = [npu, warned, self](const graph::GraphSpec& spec) mutable {
    if (!npu) return false;
    Result<devices::PrepareReport> r = devices::prepare_graph(*npu, spec);
    if (!r.ok() && r.status().code() == StatusCode::kDataLoss) {
      if (self->refused_.ok()) self->refused_ = r.status();
      return false;
    }
    // A fused norm + projections is tried where the cache may hold it: without one it runs unfused, unwarned.
    if (!r.ok() && !warned && spec.kind != graph::OpKind::kNormLinear) {
      std::fprintf(stderr, "tandem: warning: npu cannot run %s (%s); that part runs on the GPU\n", spec.key().c_str(),
                   r.status().message().c_str());
      warned = true;
    }
    return r.ok();
  };
  SupportsFn supports = [raw](const std::string& device, const graph::OpCall& call) {
    return raw.at(device)->supports(call);
  };
  PadScratch pad{h->memory_.get_as<float>(pad_x), h->memory_.get_as<float>(pad_y), pad_rows, pad_cols};
  h->partitioner_ = std::make_unique<Partitioner>(o.partition, pad, npu_can_run, supports);
  h->driver_ = std::make_unique<RealDriver>(raw, o.sync, o.poll_host_devices);
  h->options_ = std::move(o);
  return h;
}

ExecutionReport HeteroForward::execution_report() const {
  std::string set;
  for (const auto& [name, d] : devices_) set += (set.empty() ? "" : "+") + name;
  const PartitionOptions& p = options_.partition;
  // A plan decides per matmul and length; the strategy applies where it has no entry.
  const std::string how = p.npu.empty()      ? std::string("(no npu: every op on ") + p.gpu + ")"
                          : p.decider ? std::string("plan (") + strategy_name(p.strategy) + " where it has no entry)"
                                      : std::string(strategy_name(p.strategy));
  ExecutionReport r = report_with_pool(set + " " + how, memory_);
  const DriverStats& s = driver_->stats();
  r.host_bytes_copied = s.host_bytes_copied;
  for (const auto& [name, d] : devices_) {
    r.device_bytes_copied += devices::bytes_copied(*d);
    r.device_bytes_converted += devices::bytes_converted(*d);
  }
  const devices::StaticGraphs* graphs = npu_ ? npu_->static_graphs() : nullptr;
  const devices::CompiledPrograms* programs = npu_ ? npu_->compiled_programs() : nullptr;
  r.npu_graphs = graphs ? graphs->graphs_prepared() : 0;
  r.npu_graphs_compiled = programs ? programs->graphs_from_cache() : 0;
  r.npu_graphs_not_cached = programs ? programs->graphs_not_cached() : 0;
  r.npu_first_not_cached = programs ? programs->first_not_cached() : "";
  r.placed_elsewhere = partitioner_->placed_elsewhere();
  r.npu_row_ops = partitioner_->npu_row_ops();
  r.npu_fused = partitioner_->npu_fused();
  r.kv = kv_note_;
  r.kv_bytes = buffers_.kv_bytes;
  r.npu_kv_appends = partitioner_->npu_kv_appends();
  r.first_placement = partitioner_->first_placement();
  r.device_note = device_note_;
  r.plan = plan_.summary + (plan_.taken ? plan_.taken() : std::string());
  r.npu_prepare_seconds = prepare_seconds();
  r.npu_prepare_fallbacks = uint64_t(partitioner_->fallbacks());
  r.npu_run_fallbacks = s.rerun_on_fallback;
  r.reruns_behind_failure = s.discarded_behind_failure;
  r.sync = sync_mode_name(options_.sync);
  for (const std::string& d : flag_devices_) r.flag_devices += (r.flag_devices.empty() ? "" : ",") + d;
  r.fast_waits = s.fast_waits;
  r.fast_fallbacks = s.fast_fallbacks;
  r.blocking_by_choice = s.blocking_by_choice;
  r.blocking_no_free_core = s.blocking_no_free_core;
  r.tasks = s.tasks;
  r.queued_ahead = s.queued_ahead;
  for (const auto& [name, n] : s.tasks_per_device) {
    DeviceUsage& u = r.devices[name];
    u.tasks = n;
    u.busy_seconds = s.busy_seconds.count(name) ? s.busy_seconds.at(name) : 0.0;
    u.device_seconds = s.device_seconds.count(name) ? s.device_seconds.at(name) : 0.0;
    u.queued_ahead = s.queued_ahead_per_device.count(name) ? s.queued_ahead_per_device.at(name) : 0;
  }
  return r;
}

double HeteroForward::prepare_seconds() const {
  double total = 0;
  for (const auto& [name, d] : devices_)
    if (const devices::StaticGraphs* g = d->static_graphs()) total += g->prepare_seconds_total();
  return total;
}

Status HeteroForward::run_ops(const std::vector<graph::OpCall>& ops) {
  graph_.clear();
  partitioner_->lower_forward(ops, [this](const graph::OpCall& op) { return graph::is_layer_matmul(*model_, op); }, graph_);
  if (!refused_.ok()) return refused_;
  if (!partitioner_->error().empty()) return Unsupported(partitioner_->error());
  return driver_->run(graph_);
}

}  // namespace tandem
