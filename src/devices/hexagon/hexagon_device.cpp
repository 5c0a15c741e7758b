#include "devices/hexagon/hexagon_device.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "devices/hexagon/weight_repack.h"
#include "hexagon/host/fastrpc/fastrpc_transport.h"
#include "hexagon/host/toolchain.h"

#include <unistd.h>

namespace tandem::devices {

namespace {

using hexagon::PoolBuffer;
using hexagon::WeightFormat;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Activation buffers of the shapes the partitioner prepares (standard lengths x widths) come on
// top of the weights. The file is sparse: pages the DSP never touches cost nothing. 32-bit DSP
// addresses cap the whole mapping below 2 GiB.
constexpr size_t kActivationBytes = size_t(96) << 20;
constexpr size_t kListingPoolBytes = size_t(4) << 20;
constexpr size_t kMaxPoolBytes = (size_t(1) << 31) - (size_t(16) << 20);

bool is_matrix(const Weight& w) { return w.present() && w.rows > 1 && w.cols > 1; }

// What the layer matmuls' weights take in the DSP's formats.
size_t layer_weight_bytes(const Model& m) {
  size_t total = 0;
  for (const LayerWeights& l : m.layers()) {
    for (const Weight* w : l.present()) {
      if (!is_matrix(*w) || !hexagon_npu::why_not_repackable(*w).empty()) continue;
      total += hexagon::weight_bytes(hexagon_npu::dsp_format(w->type), uint32_t(w->rows), uint32_t(w->cols));
    }
  }
  return total;
}

std::string rows_key(const Weight& w, int64_t b, int64_t e) {
  char ptr[32];
  std::snprintf(ptr, sizeof ptr, "%p", static_cast<const void*>(w.data));
  return w.name + "@" + ptr + "[" + std::to_string(b) + "," + std::to_string(e) + ")";
}

// The transport TANDEM_HEXAGON_TRANSPORT asks for, else the one this machine has.
Result<std::unique_ptr<hexagon::DspTransport>> open_transport(const hexagon::DspSessionOptions& o) {
  const char* env = std::getenv("TANDEM_HEXAGON_TRANSPORT");
  const std::string asked = env && *env ? env : "";
  if (!asked.empty() && asked != "qemu" && asked != "fastrpc")
    return InvalidArgument("TANDEM_HEXAGON_TRANSPORT: '" + asked + "' is not qemu or fastrpc");
  hexagon::FastrpcOptions f;
  f.pool_bytes = o.pool_bytes;
  if (asked == "fastrpc") {
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<hexagon::FastrpcTransport> t, hexagon::FastrpcTransport::open(f));
    return std::unique_ptr<hexagon::DspTransport>(std::move(t));
  }
  Result<hexagon::HexagonToolchain> tc = hexagon::find_hexagon_toolchain();
  if (asked.empty() && !tc.ok() && access(f.device.c_str(), R_OK | W_OK) == 0) {
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<hexagon::FastrpcTransport> t, hexagon::FastrpcTransport::open(f));
    return std::unique_ptr<hexagon::DspTransport>(std::move(t));
  }
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<hexagon::DspSession> s, hexagon::DspSession::open(o));
  return std::unique_ptr<hexagon::DspTransport>(std::move(s));
}

}  // namespace

pid_t HexagonDevice::dsp_pid() const {
  const auto* s = dynamic_cast<const hexagon::DspSession*>(session_.get());
  return s ? s->pid() : -1;
}

Result<std::unique_ptr<HexagonDevice>> HexagonDevice::open(std::shared_ptr<const Model> model,
                                                           hexagon::DspSessionOptions options) {
  if (model) {
    options.pool_bytes = std::min(kMaxPoolBytes, layer_weight_bytes(*model) + kActivationBytes);
  } else {
    options.pool_bytes = kListingPoolBytes;
  }
  // A call's bound: a hung DSP is killed after it and its work reruns elsewhere. Tests shorten it.
  if (const char* v = std::getenv("TANDEM_HEXAGON_CALL_TIMEOUT_MS"); v && *v) {
    char* end = nullptr;
    const long ms = std::strtol(v, &end, 10);
    if (*end != '\0' || ms < 1 || ms > 3600 * 1000)
      return InvalidArgument(std::string("TANDEM_HEXAGON_CALL_TIMEOUT_MS: '") + v + "' is not a count of milliseconds (1..3600000)");
    options.call_timeout = std::chrono::milliseconds(ms);
  }
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<hexagon::DspTransport> s, open_transport(options));
  TANDEM_ASSIGN_OR_RETURN(uint32_t version, s->ping(0x7a11));
  (void)version;
  return std::unique_ptr<HexagonDevice>(new HexagonDevice(std::move(s), std::move(options)));
}

std::unique_ptr<HexagonDevice> HexagonDevice::open_host_oracle() {
  return std::unique_ptr<HexagonDevice>(new HexagonDevice(nullptr, {}));
}

Status HexagonDevice::use_compile_cache(std::shared_ptr<const compile_cache::CompileCache> cache) {
  std::lock_guard lock(mu_);
  if (!graphs_.empty()) return Internal("hexagon: a compile cache must be given before any graph is prepared");
  TANDEM_RETURN_IF_ERROR(cache->verify_hexagon(kTarget));
  if (session_) {  // the cache's binary, in a fresh DSP process
    if (!dynamic_cast<hexagon::DspSession*>(session_.get()))
      return Unsupported("hexagon: a compile cache's Hexagon programs run under qemu-hexagon only so far (" +
                         session_->describe() + " loads no cache binary yet)");
    hexagon::DspSessionOptions o = options_;
    o.dsp_binary = cache->hexagon_binary_path();
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<hexagon::DspSession> s, hexagon::DspSession::open(o));
    (void)session_->close();
    session_ = std::move(s);
    options_ = std::move(o);
    packed_.clear();
    staging_.clear();
  }
  cache_ = std::move(cache);
  return Status::Ok();
}

DeviceCaps HexagonDevice::caps() const {
  DeviceCaps c;
  c.kind = DeviceKind::kNpu;
  c.dynamic_shapes = false;
  c.unified_memory = false;  // activations are copied into the DSP's pool and back
  c.async = false;
  c.detail = identity() + ", static graphs, int8 activations x Q4_0/Q8_0 weights";
  c.computes_on_host_cores = true;  // qemu-hexagon runs on one of them (the oracle: on the caller's)
  return c;
}

std::string HexagonDevice::identity() const {
  if (!session_) return "Hexagon v66 HVX-128 arithmetic by the host oracle (no DSP)";
  return dynamic_cast<const hexagon::DspSession*>(session_.get()) ? "Hexagon v66 HVX-128 under qemu-hexagon (emulated)"
                                                                   : "Hexagon v66 HVX-128 on the cDSP (" + session_->describe() + ")";
}

Status HexagonDevice::dead() const {
  return Unsupported("hexagon: the DSP process is gone; its work runs elsewhere");
}

bool HexagonDevice::supports(const OpCall& c) const {
  std::lock_guard lock(mu_);
  return alive() && c.kind == OpKind::kMatmul && validate_call(c).ok() &&
         graphs_.count(GraphSpec::of(c).key()) > 0;
}

Result<const HexagonDevice::PackedRows*> HexagonDevice::pack(const Weight& w, int64_t row_begin, int64_t row_end) {
  const std::string key = rows_key(w, row_begin, row_end);
  if (auto it = packed_.find(key); it != packed_.end()) return &it->second;
  const WeightFormat f = hexagon_npu::dsp_format(w.type);
  const size_t bytes = hexagon::weight_bytes(f, uint32_t(row_end - row_begin), uint32_t(w.cols));
  TANDEM_ASSIGN_OR_RETURN(Buffer buf, allocate(bytes, 128));
  TANDEM_RETURN_IF_ERROR(hexagon_npu::repack_rows(w, row_begin, row_end, buf.host));
  copied_ += bytes;
  return &packed_.emplace(key, PackedRows{f, buf}).first->second;
}

Result<HexagonDevice::Buffer> HexagonDevice::allocate(size_t bytes, size_t align) {
  if (session_) {
    TANDEM_ASSIGN_OR_RETURN(PoolBuffer b, session_->allocate(bytes, align));
    return Buffer{b, session_->host(b)};
  }
  // new[] of bytes is aligned for max_align_t only; the oracle reads bytes, so that is enough.
  host_memory_.emplace_back(new uint8_t[std::max<size_t>(bytes, 1)]());
  return Buffer{PoolBuffer{}, host_memory_.back().get()};
}

Result<const HexagonDevice::Staging*> HexagonDevice::staging_for(uint32_t m, uint32_t in, uint32_t out) {
  const std::string key = std::to_string(m) + "x" + std::to_string(in) + "x" + std::to_string(out);
  if (auto it = staging_.find(key); it != staging_.end()) return &it->second;
  Staging s;
  TANDEM_ASSIGN_OR_RETURN(s.x, allocate(size_t(m) * in * sizeof(float), 128));
  if (session_) {  // the oracle keeps its quantized rows in vectors of its own
    // One scratch (a program's buf[1]): the int8 rows, then their scales.
    const size_t q_bytes = size_t(m) * thx_act_stride(in), d_bytes = size_t(m) * (in / THX_BLOCK) * sizeof(uint16_t);
    TANDEM_ASSIGN_OR_RETURN(s.scratch, allocate(q_bytes + d_bytes, THX_ACT_ROW_ALIGN));
    s.q = Buffer{PoolBuffer{s.scratch.pool.offset, uint32_t(q_bytes)}, s.scratch.host};
    s.scales = Buffer{PoolBuffer{uint32_t(s.scratch.pool.offset + q_bytes), uint32_t(d_bytes)}, s.scratch.host + q_bytes};
  }
  TANDEM_ASSIGN_OR_RETURN(s.y, allocate(size_t(m) * out * sizeof(float), 128));
  return &staging_.emplace(key, s).first->second;
}

Result<PrepareReport> HexagonDevice::prepare(const GraphSpec& s) {
  std::lock_guard lock(mu_);
  if (!alive()) return dead();
  const std::string key = s.key();
  if (graphs_.count(key)) return PrepareReport{true, 0.0};
  if (s.kind != OpKind::kMatmul) {
    return Unsupported(std::string("hexagon: no DSP kernel for ") + op_kind_name(s.kind) +
                       " (v66 HVX has integer vectors only; it stays on the GPU's role)");
  }
  if (!s.weight) return InvalidArgument("hexagon: graph " + key + " has no weight");
  if (std::string why = hexagon_npu::why_not_repackable(*s.weight); !why.empty())
    return Unsupported("hexagon: " + s.weight->name + ": " + why);
  if (s.m <= 0 || s.m > (1 << 16) || s.row_begin < 0 || s.row_end > s.weight->rows || s.row_begin >= s.row_end)
    return InvalidArgument("hexagon: graph " + key + " has an unsupported shape");
  const Clock::time_point t0 = Clock::now();
  Graph g;
  g.m = uint32_t(s.m);
  g.in = uint32_t(s.weight->cols);
  g.out = uint32_t(s.row_end - s.row_begin);
  TANDEM_ASSIGN_OR_RETURN(g.weights, pack(*s.weight, s.row_begin, s.row_end));
  TANDEM_ASSIGN_OR_RETURN(g.staging, staging_for(g.m, g.in, g.out));
  if (cache_) {
    const compile_cache::HexagonProgramEntry* p =
        cache_->find_hexagon(g.m, g.in, g.out, hexagon::format_name(g.weights->format));
    if (p) {
      g.program = p->index;
      ++from_cache_;
    } else {
      ++not_cached_;
      if (first_not_cached_.empty())
        first_not_cached_ = key + " (the cache has no Hexagon program of " + std::to_string(g.m) + " x " +
                            std::to_string(g.in) + " -> " + std::to_string(g.out) + " " +
                            hexagon::format_name(g.weights->format) + ": the generic kernels ran it)";
    }
  }
  graphs_.emplace(key, g);
  const double cost = seconds_since(t0);
  prepare_total_ += cost;
  return PrepareReport{false, cost};
}

Status HexagonDevice::run_on_host(const Graph& g) {
  const Staging& st = *g.staging;
  const std::span<const float> x(reinterpret_cast<const float*>(st.x.host), size_t(g.m) * g.in);
  TANDEM_ASSIGN_OR_RETURN(hexagon::QuantizedActivations q, hexagon::quantize_activations(x, g.m, g.in));
  const size_t wbytes = hexagon::weight_bytes(g.weights->format, g.out, g.in);
  TANDEM_ASSIGN_OR_RETURN(std::vector<float> y, hexagon::matmul(g.weights->format, {g.weights->buf.host, wbytes}, g.out, q));
  std::memcpy(st.y.host, y.data(), y.size() * sizeof(float));
  return Status::Ok();
}

Status HexagonDevice::run(const Graph& g, const OpCall& c) {
  const Staging& st = *g.staging;
  auto* x = reinterpret_cast<float*>(st.x.host);
  for (uint32_t i = 0; i < g.m; ++i)
    std::memcpy(x + size_t(i) * g.in, c.a.data + size_t(i) * size_t(c.a.ld), size_t(g.in) * sizeof(float));
  if (session_ && g.program >= 0) {
    TANDEM_RETURN_IF_ERROR(session_->run_program(uint32_t(g.program), g.weights->format, st.x.pool, st.scratch.pool,
                                                 g.weights->buf.pool, st.y.pool, g.m, g.in, g.out));
    ++dsp_calls_;
  } else if (session_) {
    TANDEM_RETURN_IF_ERROR(session_->quantize(st.x.pool, st.q.pool, st.scales.pool, g.m, g.in));
    ++dsp_calls_;
    TANDEM_RETURN_IF_ERROR(
        session_->matmul(g.weights->format, g.weights->buf.pool, st.q.pool, st.scales.pool, st.y.pool, g.m, g.in, g.out));
    ++dsp_calls_;
  } else {
    TANDEM_RETURN_IF_ERROR(run_on_host(g));
  }
  const auto* y = reinterpret_cast<const float*>(st.y.host);
  for (uint32_t i = 0; i < g.m; ++i)
    std::memcpy(c.out.data + size_t(i) * size_t(c.out.ld) + c.row_begin, y + size_t(i) * g.out,
                size_t(g.out) * sizeof(float));
  copied_ += (size_t(g.in) + g.out) * g.m * sizeof(float);
  return Status::Ok();
}

Result<std::unique_ptr<Completion>> HexagonDevice::submit(const OpCall& c) {
  TANDEM_RETURN_IF_ERROR(validate_call(c));
  std::lock_guard lock(mu_);
  const std::string key = GraphSpec::of(c).key();
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    return Unsupported("hexagon: no prepared graph for " + key + " (the NPU runs static shapes only; prepare() it first)");
  }
  const Clock::time_point t0 = Clock::now();
  Status st = alive() ? run(it->second, c) : dead();
  return std::unique_ptr<Completion>(new FinishedCompletion(std::move(st), seconds_since(t0)));
}

}  // namespace tandem::devices
