#include "hexagon/host/dsp_session.h"

#include <atomic>
#include <cstring>
#include <thread>
#include <utility>

#include "hexagon/host/doorbell.h"
#include "hexagon/host/toolchain.h"

namespace tandem::hexagon {

namespace {

using Clock = std::chrono::steady_clock;

uint32_t load_acquire(const uint32_t& w) {
  return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(w)).load(std::memory_order_acquire);
}

}  // namespace



Result<std::unique_ptr<DspSession>> DspSession::open(const DspSessionOptions& options) {
  DspSessionOptions o = options;
  if (o.qemu.empty() || o.dsp_binary.empty()) {
    TANDEM_ASSIGN_OR_RETURN(HexagonToolchain t, find_hexagon_toolchain());
    if (o.qemu.empty()) o.qemu = t.qemu;
    if (o.dsp_binary.empty()) o.dsp_binary = t.dsp_binary;
  }
  if (o.pool_bytes > (size_t(1) << 31) - THX_HEADER_BYTES - THX_GUARD_BYTES - 4096)
    return InvalidArgument("hexagon: a pool of " + std::to_string(o.pool_bytes) + " bytes is over the DSP's 2 GiB");
  TANDEM_ASSIGN_OR_RETURN(ShmFile shm, ShmFile::create(THX_HEADER_BYTES + o.pool_bytes + THX_GUARD_BYTES));
  auto* h = reinterpret_cast<thx_header*>(shm.data());
  h->magic = THX_MAGIC;
  h->version = THX_VERSION;
  h->header_bytes = THX_HEADER_BYTES;
  h->map_bytes = uint32_t(shm.size());
  h->dsp_state = THX_DSP_STARTING;
  // QEMU_CPU names the CPU of the emulator this host may itself run under (qemu-aarch64 in
  // scripts/test-arm64.sh); qemu-hexagon would take it as its own and refuse to start. The DSP's
  // CPU is the binary's (v66).
  TANDEM_ASSIGN_OR_RETURN(DspProcess p, DspProcess::spawn({o.qemu, o.dsp_binary, shm.path()}, {"QEMU_CPU"}));
  std::unique_ptr<DspSession> s(new DspSession(std::move(shm), std::move(p), o));
  TANDEM_RETURN_IF_ERROR(s->wait_until_serving(o.start_timeout));
  s->shm_.unlink();  // mapped on both sides: the name has done its job
  return s;
}

DspSession::DspSession(ShmFile shm, DspProcess process, const DspSessionOptions& options)
    : shm_(std::move(shm)), process_(std::move(process)), options_(options) {}

DspSession::~DspSession() { process_.kill_and_reap(); }

Status DspSession::wait_until_serving(std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (load_acquire(header()->dsp_state) != THX_DSP_SERVING) {
    if (std::optional<std::string> how = process_.poll_exit()) {
      dead_ = true;
      death_ = *how + " while starting";
      return Internal("hexagon DSP process " + death_ + " (" + options_.qemu + " " + options_.dsp_binary + ")");
    }
    if (Clock::now() >= deadline) {
      process_.kill_and_reap();
      dead_ = true;
      death_ = "did not start";
      return Internal("hexagon DSP process did not start serving within " + std::to_string(timeout.count()) +
                      " ms (process killed)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (header()->dsp_version != THX_VERSION)
    return Internal("hexagon DSP speaks protocol version " + std::to_string(header()->dsp_version) + ", the host " +
                    std::to_string(THX_VERSION));
  seq_ = header()->doorbell;
  return Status::Ok();
}

Status DspSession::dead_status() const { return Internal("hexagon DSP process is gone: it " + death_); }

bool DspSession::command_running() const {
  const uint32_t bell = load_acquire(header()->doorbell);
  return load_acquire(header()->accepted) == bell && load_acquire(header()->completion) != bell;
}

Result<DspReply> DspSession::invoke(const DspCall& call, std::optional<std::chrono::milliseconds> timeout) {
  if (dead_) return dead_status();
  thx_header* h = header();
  h->handle = call.handle;
  h->method = call.method;
  h->status = ~0u;
  for (int i = 0; i < THX_MAX_BUFFERS; ++i) h->buf[i] = {call.buf[i].offset, call.buf[i].bytes};
  h->n = call.n;
  h->in = call.in;
  h->out = call.out;
  h->format = call.format;
  for (int i = 0; i < 4; ++i) {
    h->arg[i] = call.arg[i];
    h->result[i] = 0;
  }
  const std::chrono::milliseconds limit = timeout.value_or(options_.call_timeout);
  const Clock::time_point start = Clock::now();
  const uint32_t seq = ++seq_;
  ring_doorbell(&h->doorbell, seq);
  std::optional<std::string> exit;
  const WaitOutcome w = wait_for_flag(&h->completion, seq, start + limit, [&] {
    exit = process_.poll_exit();
    return !exit.has_value();
  });
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  const std::string name = method_name(call.method);
  if (w == WaitOutcome::kDead) {
    dead_ = true;
    death_ = *exit + " during " + name;
    return Internal("hexagon DSP process " + death_);
  }
  if (w == WaitOutcome::kTimedOut) {
    process_.kill_and_reap();
    dead_ = true;
    death_ = "did not complete " + name + " within " + std::to_string(limit.count()) + " ms and was killed";
    return Internal("hexagon DSP process " + death_);
  }
  DspReply r;
  r.status = h->status;
  for (int i = 0; i < 4; ++i) r.result[i] = h->result[i];
  r.round_trip_ns = last_round_trip_ns_ = ns;
  if (call.handle == THX_HANDLE_KERNELS && call.method == THX_METHOD_QUIT && r.status == THX_OK) {
    dead_ = true;
    death_ = "was told to quit";
  }
  return r;
}


Status DspSession::close() {
  if (dead_) {
    process_.kill_and_reap();
    return Status::Ok();
  }
  DspCall quit;
  quit.method = THX_METHOD_QUIT;
  Result<DspReply> r = invoke(quit, std::chrono::milliseconds(2000));
  if (!r.ok()) return r.status();
  if (!process_.wait_exit(2000)) {
    process_.kill_and_reap();
    return Internal("hexagon DSP process did not exit within 2 s of quit (killed)");
  }
  return Status::Ok();
}





Result<PoolBuffer> DspSession::allocate(size_t bytes, size_t align) {
  return bump_allocate(&next_, shm_.size(), bytes, align);
}

}  // namespace tandem::hexagon
