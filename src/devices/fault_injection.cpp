#include "devices/fault_injection.h"

namespace tandem::devices {

Result<FaultPlan> parse_fault_plan(const std::string& text, const std::string& source) {
  FaultPlan p;
  if (text == "prepare") {
    p.fail_prepare = true;
  } else if (text == "run") {
    p.fail_run_every = 1;
  } else if (text.rfind("run:", 0) == 0) {
    const std::string n = text.substr(4);
    long v = 0;
    bool digits = !n.empty() && n.size() <= 9;
    for (char ch : n) digits = digits && ch >= '0' && ch <= '9';
    if (digits) v = std::stol(n);
    if (!digits || v < 1) return InvalidArgument(source + ": '" + text + "': N in run:N must be a whole number >= 1");
    p.fail_run_every = int(v);
  } else {
    return InvalidArgument(source + ": '" + text + "' is not a fault plan (prepare, run, run:N)");
  }
  return p;
}

namespace {

// The inner work finished (its completion was waited for), then the fault is reported, as when
// a device signals an error after the kernel ran: the output may hold anything.
class FailedAfterRun final : public Completion {
 public:
  explicit FailedAfterRun(std::unique_ptr<Completion> inner) : inner_(std::move(inner)) {}
  Status wait() override {
    (void)inner_->wait();
    return Internal("injected device failure");
  }
  bool ready() override { return inner_->ready(); }
  double device_seconds() const override { return inner_->device_seconds(); }

 private:
  std::unique_ptr<Completion> inner_;
};

}  // namespace

Result<PrepareReport> FaultInjectingDevice::prepare(const GraphSpec& spec) {
  if (plan_.fail_prepare) {
    ++injected_;
    return Internal("injected prepare failure for " + spec.key());
  }
  return prepare_graph(*inner_, spec);
}

Result<std::unique_ptr<Completion>> FaultInjectingDevice::submit(const OpCall& call) {
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Completion> c, inner_->submit(call));
  const uint64_t n = ++submitted_;
  if (plan_.fail_run_every > 0 && n % uint64_t(plan_.fail_run_every) == 0) {
    ++injected_;
    // Scribble on the output so a fallback that forgets to recompute it shows in the result.
    if (call.kind == OpKind::kKvStore && call.paged_kv()) {  // its output is the pages, not a row of the pool
      (void)c->wait();
      // The first byte of the appended keys: the high byte of an fp16 or f32 value, or an fp16
      // block scale's low byte; any of them changes the key.
      call.k_pages[kv_offset(call.kv_pages, uint32_t(call.n_past), 0) + (call.kv_pages.type == DType::Q8_0 ? 0 : 1)] ^= 0x7b;
    } else if (call.out.data && call.out.rows > 0) {
      (void)c->wait();
      const int64_t c0 = call.kind == OpKind::kMatmul ? call.row_begin : 0;
      call.out.data[c0] = 1e30f;
    }
    return std::unique_ptr<Completion>(new FailedAfterRun(std::move(c)));
  }
  return c;
}

}  // namespace tandem::devices
