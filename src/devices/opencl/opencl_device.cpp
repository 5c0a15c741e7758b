#include "devices/opencl/opencl_device.h"

#include <atomic>

namespace tandem::devices {
namespace {

// Keeps per-call buffers alive until the kernel that uses them has finished. With a completion
// flag, ready() is one acquire load of the flag in shared memory (the fast-sync poll); without,
// it asks the OpenCL runtime for the event's status.
class ClCompletion final : public Completion {
 public:
  ClCompletion(opencl::Event e, std::vector<opencl::Buffer> temps, const uint64_t* flag, uint64_t seq,
               opencl::Event flag_event)
      : event_(std::move(e)), flag_event_(std::move(flag_event)), temps_(std::move(temps)), flag_(flag), seq_(seq) {}
  Status wait() override {
    if (!waited_) {
      status_ = event_.wait();
      if (status_.ok() && flag_) status_ = flag_event_.wait();
      waited_ = true;
    }
    return status_;
  }
  bool ready() override {
    if (waited_) return true;
    if (flag_) {
      // A failed kernel never raises the flag: the waiter's fast path times out and wait()
      // reports the failure.
      return std::atomic_ref<const uint64_t>(*flag_).load(std::memory_order_acquire) >= seq_;
    }
    auto done = event_.complete();
    return !done.ok() || *done;  // a failed command is "ready": wait() then reports the failure
  }
  double device_seconds() const override {
    auto ns = event_.elapsed_ns();
    return ns.ok() ? double(*ns) * 1e-9 : 0.0;
  }

 private:
  opencl::Event event_, flag_event_;
  std::vector<opencl::Buffer> temps_;
  const uint64_t* flag_;
  uint64_t seq_;
  bool waited_ = false;
  Status status_;
};

// Bytes spanned by rows x cols floats with row stride ld.
size_t span_bytes(const Act& a) { return (size_t(a.rows - 1) * size_t(a.ld) + size_t(a.cols)) * sizeof(float); }

}  // namespace

Result<std::unique_ptr<OpenclDevice>> OpenclDevice::create(std::shared_ptr<const Model> model) {
  std::unique_ptr<OpenclDevice> d(new OpenclDevice());
  opencl::RuntimeOptions ro;
  ro.profiling = true;
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<opencl::Runtime> rt, opencl::Runtime::create(ro));
  TANDEM_ASSIGN_OR_RETURN(d->ops_, opencl::Ops::create(rt));
  d->model_ = std::move(model);
  // Without a model the device can still be listed and probed, but runs nothing.
  if (d->model_) {
    TANDEM_ASSIGN_OR_RETURN(d->weights_, opencl::ModelWeights::map(*rt, *d->model_));
  }
  return d;
}

DeviceCaps OpenclDevice::caps() const {
  const opencl::DeviceCaps& c = ops_->runtime().caps();
  return DeviceCaps{DeviceKind::kGpu, true, c.host_unified_memory, true, c.describe(), c.is_cpu};
}

std::string OpenclDevice::identity() const {
  // The detail line's global memory follows the host's free memory (PoCL); the rest names the device.
  const opencl::DeviceCaps& c = ops_->runtime().caps();
  return c.name + " (" + c.version + "; " + c.platform + "), " + std::to_string(c.compute_units) + " compute units";
}

bool OpenclDevice::supports(const OpCall& call) const {
  if (!model_ || !validate_call(call).ok() || call.kind == OpKind::kNormLinear) return false;
  // A typed cache (f32 / f16 / q8_0 keys and values, either layout): kv_store_pages takes rows
  // with a stride, attention_pages heads up to kMaxHeadDim.
  if ((call.kind == OpKind::kKvStore || call.kind == OpKind::kAttention) && call.paged_kv()) {
    if (!opencl::Ops::supports_kv(call.kv_pages)) return false;
    return call.kind == OpKind::kKvStore || call.head_dim <= opencl::Ops::kMaxHeadDim;
  }
  if (call.kind == OpKind::kMatmul || call.kind == OpKind::kGetRows) return opencl::Ops::supports(call.weight->type);
  if (call.kind == OpKind::kAttention) return call.head_dim <= opencl::Ops::kMaxHeadDim;
  // These kernels walk rows as one contiguous block; strided views go to another device.
  const bool dense_a = call.a.ld == call.a.cols, dense_out = call.out.ld == call.out.cols;
  switch (call.kind) {
    case OpKind::kRmsNorm:
    case OpKind::kAdd:
    case OpKind::kSwiglu:
    case OpKind::kGeglu: return dense_a && dense_out;
    case OpKind::kSoftcap: return dense_out;
    case OpKind::kKvStore: return dense_a && call.b.ld == call.b.cols;
    default: return true;
  }
}

Status OpenclDevice::map_shared_memory(void* base, size_t bytes) {
  TANDEM_ASSIGN_OR_RETURN(opencl::Buffer b, ops_->runtime().wrap_host(base, bytes, false));
  regions_.push_back(Region{static_cast<const char*>(base), bytes, std::move(b)});
  return Status::Ok();
}

bool OpenclDevice::use_completion_flag(uint64_t* flag) {
  const char* c = reinterpret_cast<const char*>(flag);
  if (!flag || reinterpret_cast<uintptr_t>(flag) % 8 != 0) return false;
  for (const Region& r : regions_) {
    if (c >= r.base && c + 8 <= r.base + r.bytes && r.buf.zero_copy()) {
      flag_ = flag;
      flag_ref_ = opencl::BufRef{r.buf.mem(), size_t(c - r.base)};
      flag_seq_ = std::atomic_ref<uint64_t>(*flag).load(std::memory_order_acquire);
      return true;
    }
  }
  return false;
}

Result<opencl::BufRef> OpenclDevice::resolve(const void* p, size_t bytes, std::vector<opencl::Buffer>& temps) {
  const char* c = static_cast<const char*>(p);
  for (const Region& r : regions_)
    if (c >= r.base && c + bytes <= r.base + r.bytes) return opencl::BufRef{r.buf.mem(), size_t(c - r.base)};
  TANDEM_ASSIGN_OR_RETURN(opencl::Buffer b, ops_->runtime().wrap_host(const_cast<void*>(p), bytes, false));
  temps.push_back(std::move(b));
  return opencl::BufRef{temps.back().mem(), 0};
}

Status OpenclDevice::enqueue(const OpCall& c, std::vector<opencl::Buffer>& temps, opencl::Event* done) {
  opencl::Ops& ops = *ops_;
  const int64_t n = c.out.rows;
  auto act = [&](const Act& a) { return resolve(a.data, span_bytes(a), temps); };
  TANDEM_ASSIGN_OR_RETURN(opencl::BufRef out, act(c.out));
  switch (c.kind) {
    case OpKind::kMatmul: {
      const Weight& w = *c.weight;
      opencl::WeightRef slice = weights_.ref(w);
      slice.data = weights_.at(w.data + size_t(c.row_begin) * w.row_bytes());
      slice.rows = c.row_end - c.row_begin;
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef x, act(c.a));
      return ops.matmul(slice, x, n, c.a.ld, out.at(size_t(c.row_begin) * 4), c.out.ld, done);
    }
    case OpKind::kGetRows: {
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef ids, resolve(c.ids, size_t(n) * 4, temps));
      return ops.get_rows(weights_.ref(*c.weight), ids, n, out, c.out.ld, done, c.scale != 0 ? c.scale : 1.0f);
    }
    case OpKind::kRmsNorm: {
      if (c.a.ld != c.a.cols || c.out.ld != c.out.cols) return Unsupported("opencl rmsnorm: strided rows");
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef x, act(c.a));
      return ops.rmsnorm(x, weights_.at(c.weight->data), out, n, c.out.cols, c.eps, done);
    }
    case OpKind::kAddBias:
      return ops.add_bias(out, weights_.at(c.weight->data), n, c.out.cols, c.out.ld, done);
    case OpKind::kRope: {
      const size_t table = size_t(n) * size_t(c.head_dim / 2) * 4;
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef cs, resolve(c.cos, table, temps));
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef sn, resolve(c.sin, table, temps));
      return ops.rope_inplace(out, n, c.out.ld, c.n_heads, c.head_dim, cs, sn, c.half_split, done);
    }
    case OpKind::kKvStore: {
      if (c.paged_kv()) {
        // The pages lie in the mapped pool (zero copy); elsewhere they are wrapped for the call.
        const KvGeometry& g = c.kv_pages;
        TANDEM_ASSIGN_OR_RETURN(opencl::BufRef k, act(c.a));
        TANDEM_ASSIGN_OR_RETURN(opencl::BufRef v, act(c.b));
        TANDEM_ASSIGN_OR_RETURN(opencl::BufRef kp, resolve(c.k_pages, size_t(g.bytes()), temps));
        TANDEM_ASSIGN_OR_RETURN(opencl::BufRef vp, resolve(c.v_pages, size_t(g.values().bytes()), temps));
        return ops.kv_store_pages(k, c.a.ld, v, c.b.ld, n, g, kp, vp, c.n_past, done);
      }
      if (c.a.ld != c.a.cols || c.b.ld != c.b.cols) return Unsupported("opencl kv_store: strided rows");
      const size_t cache = size_t(c.context) * size_t(c.a.cols) * 4;
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef k, act(c.a));
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef v, act(c.b));
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef kc, resolve(c.k_cache, cache, temps));
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef vc, resolve(c.v_cache, cache, temps));
      return ops.kv_store(k, v, kc, vc, n, int(c.a.cols), c.context, c.n_past, done);
    }
    case OpKind::kAttention: {
      if (c.paged_kv()) {
        const KvGeometry& g = c.kv_pages;
        TANDEM_ASSIGN_OR_RETURN(opencl::BufRef q, act(c.a));
        TANDEM_ASSIGN_OR_RETURN(opencl::BufRef kp, resolve(c.k_pages, size_t(g.bytes()), temps));
        TANDEM_ASSIGN_OR_RETURN(opencl::BufRef vp, resolve(c.v_pages, size_t(g.values().bytes()), temps));
        return ops.attention_pages(q, c.a.ld, g, kp, vp, out, c.out.ld, n, c.n_heads, c.n_past, done,
                                   {c.scale, c.softcap, c.window});
      }
      const size_t cache = size_t(c.context) * size_t(c.n_kv_heads) * size_t(c.head_dim) * 4;
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef q, act(c.a));
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef kc, resolve(c.k_cache, cache, temps));
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef vc, resolve(c.v_cache, cache, temps));
      return ops.attention(q, c.a.ld, kc, vc, out, c.out.ld, n, c.n_heads, c.n_kv_heads, c.head_dim, c.context,
                           c.n_past, done, {c.scale, c.softcap, c.window});
    }
    case OpKind::kSwiglu:
    case OpKind::kGeglu:
    case OpKind::kAdd: {
      if (c.a.ld != c.a.cols || c.out.ld != c.out.cols) return Unsupported("opencl elementwise: strided rows");
      TANDEM_ASSIGN_OR_RETURN(opencl::BufRef a, act(c.a));
      const int64_t count = n * c.out.cols;
      if (c.kind == OpKind::kAdd) return ops.add_inplace(out, a, count, done);
      return c.kind == OpKind::kSwiglu ? ops.swiglu_inplace(out, a, count, done) : ops.geglu_inplace(out, a, count, done);
    }
    case OpKind::kSoftcap:
      if (c.out.ld != c.out.cols) return Unsupported("opencl softcap: strided rows");
      return ops.softcap_inplace(out, n * c.out.cols, c.softcap, done);
    case OpKind::kNormLinear:
      return Unsupported("opencl: a fused norm_linear runs on the npu (or the cpu); the GPU runs its ops unfused");
  }
  return Internal("opencl: unknown op");
}

Result<std::unique_ptr<Completion>> OpenclDevice::submit(const OpCall& c) {
  TANDEM_RETURN_IF_ERROR(validate_call(c));
  if (!model_) return InvalidArgument("opencl: the device was opened without a model");
  std::vector<opencl::Buffer> temps;
  opencl::Event done;
  TANDEM_RETURN_IF_ERROR(enqueue(c, temps, &done));
  opencl::Event flag_done;
  uint64_t seq = 0;
  if (flag_) {
    seq = ++flag_seq_;
    TANDEM_RETURN_IF_ERROR(ops_->signal_flag(flag_ref_, seq, &flag_done));
  }
  TANDEM_RETURN_IF_ERROR(ops_->runtime().flush());
  return std::unique_ptr<Completion>(
      new ClCompletion(std::move(done), std::move(temps), flag_, seq, std::move(flag_done)));
}

}  // namespace tandem::devices
