#include "devices/npu/npu_device.h"

#include <set>

#include <vector>


namespace tandem::devices {

namespace {

npu::oplib::EltOp elt_op_of(OpKind k) {
  return k == OpKind::kRmsNorm ? npu::oplib::EltOp::kRmsNorm
         : k == OpKind::kSwiglu ? npu::oplib::EltOp::kSwiglu : npu::oplib::EltOp::kAdd;
}

// The NPU computes in fp16: fp32 activations of the shared pool enter and leave through fp16
// staging (a real NPU reads the fp16 tensors its producer wrote; the model converts here).
// Returns the fp32 bytes it read.
uint64_t to_fp16(const Act& a, std::vector<fp16_t>& out) {
  out.resize(size_t(a.rows * a.cols));
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = 0; k < a.cols; ++k) out[size_t(i * a.cols + k)] = f32_to_fp16(a.data[i * a.ld + k]);
  return uint64_t(a.rows * a.cols) * sizeof(float);
}

}  // namespace

bool NpuDevice::weight_type_supported(DType) { return true; }

DType NpuDevice::packed_format(DType t) { return t == DType::Q8_0 || t == DType::Q4_0 ? t : DType::F16; }

bool NpuDevice::op_kind_supported(OpKind k) {
  return k == OpKind::kMatmul || k == OpKind::kRmsNorm || k == OpKind::kSwiglu || k == OpKind::kAdd ||
         k == OpKind::kNormLinear || k == OpKind::kKvStore;
}

const compile_cache::ProgramEntry* NpuDevice::cached_program(const compile_cache::CompileCache& cache, const GraphSpec& s) {
  switch (s.kind) {
    case OpKind::kMatmul:
      if (!s.weight) return nullptr;
      return cache.find(uint32_t(s.m), uint32_t(s.weight->cols), uint32_t(s.row_end - s.row_begin),
                        std::string(dtype_name(packed_format(s.weight->type))));
    case OpKind::kRmsNorm:
    case OpKind::kSwiglu:
    case OpKind::kAdd:
      return cache.find_elementwise(std::string(npu::oplib::elt_op_name(elt_op_of(s.kind))), uint32_t(s.m), uint32_t(s.cols), s.eps);
    case OpKind::kNormLinear: {
      if (!s.weight || s.n_proj < 1 || s.n_proj > OpCall::kMaxProjections) return nullptr;
      std::vector<uint32_t> outs;
      for (int i = 0; i < s.n_proj; ++i) outs.push_back(uint32_t(s.proj[size_t(i)]->rows));
      return cache.find_norm_linear(uint32_t(s.m), uint32_t(s.weight->cols), outs,
                                    std::string(dtype_name(packed_format(s.proj[0]->type))), s.eps);
    }
    case OpKind::kKvStore:
      return s.kv.capacity > 0 ? cache.find_kv_append(uint32_t(s.m), s.kv) : nullptr;
    default: return nullptr;
  }
}

DeviceCaps NpuDevice::caps() const {
  return DeviceCaps{DeviceKind::kNpu, false, true, false,
                    "emulated NPU, target " + target_.name + ", static graphs only, fp16 compute"};
}

bool NpuDevice::supports(const OpCall& c) const {
  return op_kind_supported(c.kind) && validate_call(c).ok() &&
         (c.kind != OpKind::kMatmul || weight_type_supported(c.weight->type)) &&
         graphs_.count(GraphSpec::of(c).key()) > 0;
}

Result<NpuDevice::Graph> NpuDevice::build(const GraphSpec& s, double* cost, bool* cached) const {
  if (!op_kind_supported(s.kind)) {
    return Unsupported(std::string("npu: the operator library has no graph for ") + op_kind_name(s.kind) +
                       " (it stays on the GPU or CPU)");
  }
  if (s.m <= 0 || s.cols <= 0 || s.m > (1 << 20) || s.cols > (1 << 20)) {
    return InvalidArgument("npu: graph " + s.key() + " has an unsupported shape");
  }
  if (s.kind == OpKind::kNormLinear) return build_norm_linear(s, cost, cached);
  if (s.kind == OpKind::kKvStore) return build_kv_append(s, cost, cached);
  if (s.kind == OpKind::kMatmul) {
    if (!s.weight) return InvalidArgument("npu: matmul graph without a weight");
    if (!weight_type_supported(s.weight->type)) {
      return Unsupported("npu: weight '" + s.weight->name + "' is " + std::string(dtype_name(s.weight->type)) +
                         ", which the NPU cannot pack");
    }
    npu::oplib::MatmulSpec spec;
    spec.n = uint32_t(s.m);
    spec.in = uint32_t(s.weight->cols);
    spec.out = uint32_t(s.row_end - s.row_begin);
    spec.wtype = packed_format(s.weight->type);
    const uint8_t* rows = s.weight->data + size_t(s.row_begin) * s.weight->row_bytes();
    if (cache_) {
      if (const compile_cache::ProgramEntry* e = cached_program(*cache_, s)) {
        TANDEM_ASSIGN_OR_RETURN(npu::oplib::PreparedMatmul g,
                                load_compiled(*e, rows, size_t(spec.out) * s.weight->row_bytes(), s.weight->type));
        *cost = g.prepare_seconds;
        *cached = true;
        return Graph(std::move(g));
      }
    }
    TANDEM_ASSIGN_OR_RETURN(npu::oplib::PreparedMatmul g,
                            npu::oplib::prepare_matmul(spec, target_, rows, size_t(spec.out) * s.weight->row_bytes(),
                                                       s.weight->type));
    *cost = g.prepare_seconds;
    return Graph(std::move(g));
  }
  ElementwiseGraph g;
  g.op = elt_op_of(s.kind);
  const compile_cache::ProgramEntry* compiled = cache_ ? cached_program(*cache_, s) : nullptr;
  if (compiled) {
    TANDEM_ASSIGN_OR_RETURN(g.program, cache_->load(*compiled));  // refuses a program whose SHA-256 changed
    TANDEM_RETURN_IF_ERROR(npu::verify(g.program, target_));
    const uint64_t act = uint64_t(s.m) * uint64_t(s.cols) * 2;
    if (g.program.buffers.size() != 3 || g.program.buffers[0].bytes != act || g.program.buffers[2].bytes != act)
      return InvalidArgument(cache_->dir() + "/" + compiled->file + ": program does not bind [" + std::to_string(s.m) +
                             ", " + std::to_string(s.cols) + "] fp16 operands");
    *cached = true;
  } else {
    TANDEM_ASSIGN_OR_RETURN(g.program, npu::oplib::lower_elementwise(g.op, uint32_t(s.m), uint32_t(s.cols), target_, s.eps));
  }
  if (s.kind == OpKind::kRmsNorm) {
    if (!s.weight || s.weight->type != DType::F32 || s.weight->rows * s.weight->cols != s.cols) {
      return InvalidArgument("npu: rmsnorm graph " + s.key() + " needs an f32 gain of " + std::to_string(s.cols) + " values");
    }
    g.gain.resize(size_t(s.cols));
    for (int64_t i = 0; i < s.cols; ++i) g.gain[size_t(i)] = f32_to_fp16(s.weight->f32()[i]);
  }
  // The graph build is charged on the activation bytes it binds, as for a matmul (x and y fp16).
  const uint64_t operands = s.kind == OpKind::kRmsNorm ? 2 : 3;
  *cost = target_.prepare_seconds(operands * uint64_t(s.m * s.cols) * 2);
  return Graph(std::move(g));
}

Result<NpuDevice::Graph> NpuDevice::build_kv_append(const GraphSpec& s, double* cost, bool* cached) const {
  // The npu appends to a KV it owns, in the layout the compiler chose, with the compiler's program:
  // the operator library has no KV append of its own.
  if (s.kv.capacity == 0)
    return Unsupported("npu: " + s.key() + ": the KV is in the host's fp32 layout (an npu writes only the fp16 pages it owns)");
  if (!s.kv.fp16())
    return Unsupported("npu: " + s.key() + ": the compiled KV appends write fp16, and this cache holds " +
                       std::string(dtype_name(s.kv.type)) + " keys and " + std::string(dtype_name(s.kv.v_type)) + " values");
  if (!cache_)
    return Unsupported("npu: " + s.key() + ": a KV append runs only a compiled program (tandem compile)");
  const compile_cache::ProgramEntry* e = cached_program(*cache_, s);
  if (!e) return Unsupported("npu: " + s.key() + ": the compile cache holds no " + std::to_string(s.m) + "-row append in this layout");
  KvAppendGraph g;
  TANDEM_ASSIGN_OR_RETURN(g.program, cache_->load(*e));  // refuses a program whose SHA-256 changed
  TANDEM_RETURN_IF_ERROR(npu::verify(g.program, target_));
  g.rows = uint32_t(s.m);
  const uint64_t rows_bytes = uint64_t(s.m) * s.kv.row_bytes();
  if (g.program.buffers.size() != 2 || g.program.buffers[0].bytes != rows_bytes ||
      g.program.buffers[1].bytes != kv_window_bytes(s.kv, g.rows))
    return InvalidArgument(cache_->dir() + "/" + e->file + ": program does not bind " + std::to_string(s.m) + " rows of " +
                           std::to_string(s.kv.width()) + " fp16 values and their cache window");
  *cached = true;
  *cost = target_.prepare_seconds(2 * rows_bytes);
  return Graph(std::move(g));
}

Result<double> NpuDevice::run_kv_append(const KvAppendGraph& g, const OpCall& c) {
  // The same program appends the keys and then the values, each into its cache's window at n_past.
  const uint64_t at = kv_offset(c.kv_pages, uint32_t(c.n_past), 0);  // fp16 pages (build_kv_append)
  const size_t window = kv_window_bytes(c.kv_pages, g.rows);
  double seconds = 0;
  for (const auto& [rows, pages] : {std::pair{&c.a, c.k_pages}, std::pair{&c.b, c.v_pages}}) {
    converted_ += to_fp16(*rows, in0_);  // validate_call: the rows are the pages' width
    npu::Executor& exec = executor();
    exec.bind_const(0, in0_.data(), in0_.size() * 2);
    exec.bind(1, pages + at, window);
    TANDEM_ASSIGN_OR_RETURN(npu::ExecReport report, exec.run(g.program));
    seconds += report.seconds;
  }
  return seconds;
}

Result<npu::oplib::MatmulSpec> NpuDevice::schedule_of(const compile_cache::ProgramEntry& e) const {
  npu::oplib::MatmulSpec spec;
  spec.n = e.rows;
  spec.in = e.in;
  spec.out = e.out;
  const auto format = dtype_from_name(e.format);
  if (!format) return InvalidArgument(cache_->dir() + "/manifest.json: program '" + e.name + "' has format '" + e.format + "'");
  spec.wtype = *format;
  const Result<npu::oplib::MatmulOrder> order = npu::oplib::matmul_order_from_name(e.order);
  if (!order.ok()) return InvalidArgument(cache_->dir() + "/manifest.json: program '" + e.name + "': " + order.status().message());
  spec.order = *order;
  spec.double_buffer = e.double_buffer;
  spec.double_buffer_out = e.double_buffer_out;
  spec.arrays = e.arrays;
  return spec;
}

Result<NpuDevice::Graph> NpuDevice::build_norm_linear(const GraphSpec& s, double* cost, bool* cached) const {
  if (!cache_)
    return Unsupported("npu: " + s.key() + ": a fused norm_linear runs only a compiled program (tandem compile --fuse-clusters)");
  if (!s.weight || s.weight->type != DType::F32 || s.n_proj < 1 || s.n_proj > OpCall::kMaxProjections)
    return InvalidArgument("npu: norm_linear graph " + s.key() + " needs an f32 gain and 1.." +
                           std::to_string(OpCall::kMaxProjections) + " projections");
  const uint32_t in = uint32_t(s.weight->cols);
  std::vector<uint32_t> outs;
  for (int i = 0; i < s.n_proj; ++i) {
    const Weight* w = s.proj[size_t(i)];
    if (!w || w->cols != s.weight->cols || !weight_type_supported(w->type) ||
        packed_format(w->type) != packed_format(s.proj[0]->type))
      return Unsupported("npu: norm_linear graph " + s.key() + ": its projections need one NPU weight format and the gain's width");
    outs.push_back(uint32_t(w->rows));
  }
  const compile_cache::ProgramEntry* e = cached_program(*cache_, s);
  if (!e) return Unsupported("npu: " + s.key() + ": the compile cache has no fused norm_linear program of this shape");
  NormLinearGraph g;
  TANDEM_ASSIGN_OR_RETURN(g.program, cache_->load(*e));  // refuses a program whose SHA-256 changed
  TANDEM_RETURN_IF_ERROR(npu::verify(g.program, target_));
  npu::oplib::NormLinearSpec spec;
  TANDEM_ASSIGN_OR_RETURN(spec.base, schedule_of(*e));
  spec.outs = outs;
  spec.eps = s.eps;
  if (g.program.buffers.size() != 2 + 2 * outs.size())
    return InvalidArgument(cache_->dir() + "/" + e->file + ": program does not bind x, the gain and " + std::to_string(outs.size()) +
                           " weight packs and outputs");
  uint64_t out_rows = 0;
  for (int i = 0; i < s.n_proj; ++i) {
    const Weight& w = *s.proj[size_t(i)];
    TANDEM_ASSIGN_OR_RETURN(std::vector<uint8_t> pack,
                            npu::oplib::pack_weights_from(spec.projection(size_t(i)), target_, w.type, w.data,
                                                          size_t(w.rows) * w.row_bytes()));
    if (g.program.buffers[2 + size_t(i)].bytes != pack.size())
      return InvalidArgument(cache_->dir() + "/" + e->file + ": program does not bind a " + std::to_string(pack.size()) +
                             " B weight pack as its buffer " + std::to_string(2 + i));
    g.packs.push_back(std::move(pack));
    out_rows += uint64_t(w.rows);
  }
  g.gain.resize(in);
  for (uint32_t k = 0; k < in; ++k) g.gain[k] = f32_to_fp16(s.weight->f32()[k]);
  *cost = target_.prepare_seconds(uint64_t(s.m) * (in + out_rows) * 2);  // the activations it binds, as a matmul's
  *cached = true;
  return Graph(std::move(g));
}

Result<npu::oplib::PreparedMatmul> NpuDevice::load_compiled(const compile_cache::ProgramEntry& e, const uint8_t* rows,
                                                         size_t bytes, DType source) const {
  npu::oplib::PreparedMatmul g;
  TANDEM_ASSIGN_OR_RETURN(g.spec, schedule_of(e));
  TANDEM_ASSIGN_OR_RETURN(g.program, cache_->load(e));  // refuses a program whose SHA-256 changed
  TANDEM_RETURN_IF_ERROR(npu::verify(g.program, target_));
  TANDEM_ASSIGN_OR_RETURN(g.weight_pack, npu::oplib::pack_weights_from(g.spec, target_, source, rows, bytes));
  if (g.program.buffers.size() != 3 || g.program.buffers[1].bytes != g.weight_pack.size())
    return InvalidArgument(cache_->dir() + "/" + e.file + ": program does not bind a " + std::to_string(g.weight_pack.size()) +
                           " B weight pack as its buffer 1");
  g.graph_bytes = (uint64_t(g.spec.n) * g.spec.in + uint64_t(g.spec.n) * g.spec.out) * 2;
  g.prepare_seconds = target_.prepare_seconds(g.graph_bytes);
  return g;
}

std::string NpuDevice::why_not_cached(const GraphSpec& s) const {
  // What the cache holds nearest the request: the same weight width (matmul) or op (elementwise).
  std::set<uint32_t> rows, outs;
  const bool matmul = s.kind == OpKind::kMatmul;
  const std::string op = matmul ? "" : std::string(npu::oplib::elt_op_name(elt_op_of(s.kind)));
  for (const compile_cache::ProgramEntry& p : cache_->manifest().programs) {
    if (matmul && p.kind == "matmul" && s.weight && p.in == uint32_t(s.weight->cols)) {
      rows.insert(p.rows);
      outs.insert(p.out);
    } else if (!matmul && p.kind == "elementwise" && p.elementwise.op == op && p.elementwise.cols == uint32_t(s.cols)) {
      rows.insert(p.rows);
    }
  }
  auto list = [](const std::set<uint32_t>& v) {
    std::string out;
    for (uint32_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
    return out.empty() ? std::string("none") : out;
  };
  std::string why = s.key() + ": the cache has no program of this shape";
  if (matmul) {
    why += " (for in=" + std::to_string(s.weight ? s.weight->cols : 0) + " it has rows " + list(rows) + ", outs " + list(outs) +
           "; a weight-split slice binds when it was compiled: tandem compile --plan)";
  } else {
    why += " (for " + op + " of " + std::to_string(s.cols) + " columns it has rows " + list(rows) + ")";
  }
  return why;
}

Result<PrepareReport> NpuDevice::prepare(const GraphSpec& s) {
  const std::string key = s.key();
  if (graphs_.count(key)) return PrepareReport{true, 0.0};
  double cost = 0;
  bool cached = false;
  TANDEM_ASSIGN_OR_RETURN(Graph g, build(s, &cost, &cached));
  if (cached) ++from_cache_;
  if (cache_ && !cached) {
    ++not_cached_;
    if (first_not_cached_.empty()) first_not_cached_ = why_not_cached(s);
  }
  prepare_total_ += cost;
  graphs_.emplace(key, std::move(g));
  return PrepareReport{false, cost};
}

npu::Executor& NpuDevice::executor() {
  if (!exec_) exec_ = std::make_unique<npu::Executor>(target_);
  exec_->unbind_all();
  return *exec_;
}

Result<double> NpuDevice::run_matmul(const npu::oplib::PreparedMatmul& g, const OpCall& c) {
  const int64_t m = c.out.rows, out = c.row_end - c.row_begin;
  out16_.resize(size_t(m * out));
  converted_ += to_fp16(c.a, in0_);
  npu::Executor& exec = executor();
  exec.bind_const(0, in0_.data(), in0_.size() * 2);
  exec.bind_const(1, g.weight_pack.data(), g.weight_pack.size());
  exec.bind(2, out16_.data(), out16_.size() * 2);
  TANDEM_ASSIGN_OR_RETURN(npu::ExecReport report, exec.run(g.program));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < out; ++r)
      c.out.data[i * c.out.ld + c.row_begin + r] = fp16_to_f32(out16_[size_t(i * out + r)]);
  converted_ += uint64_t(m * out) * sizeof(float);
  return report.seconds;
}

Result<double> NpuDevice::run_elementwise(const ElementwiseGraph& g, const OpCall& c) {
  // rmsnorm: y = norm(a) * gain; swiglu: out = silu(out) * a; add: out = out + a.
  out16_.resize(size_t(c.out.rows * c.out.cols));
  npu::Executor& exec = executor();
  if (g.op == npu::oplib::EltOp::kRmsNorm) {
    converted_ += to_fp16(c.a, in0_);
    exec.bind_const(1, g.gain.data(), g.gain.size() * 2);
  } else {
    converted_ += to_fp16(c.out, in0_);
    converted_ += to_fp16(c.a, in1_);
    exec.bind_const(1, in1_.data(), in1_.size() * 2);
  }
  exec.bind_const(0, in0_.data(), in0_.size() * 2);
  exec.bind(2, out16_.data(), out16_.size() * 2);
  TANDEM_ASSIGN_OR_RETURN(npu::ExecReport report, exec.run(g.program));
  for (int64_t i = 0; i < c.out.rows; ++i)
    for (int64_t k = 0; k < c.out.cols; ++k)
      c.out.data[i * c.out.ld + k] = fp16_to_f32(out16_[size_t(i * c.out.cols + k)]);
  converted_ += uint64_t(c.out.rows * c.out.cols) * sizeof(float);
  return report.seconds;
}

Result<double> NpuDevice::run_norm_linear(const NormLinearGraph& g, const OpCall& c) {
  const int64_t m = c.out.rows;
  converted_ += to_fp16(c.a, in0_);
  npu::Executor& exec = executor();
  exec.bind_const(0, in0_.data(), in0_.size() * 2);
  exec.bind_const(1, g.gain.data(), g.gain.size() * 2);
  const size_t k = g.packs.size();
  proj16_.resize(k);
  for (size_t i = 0; i < k; ++i) {
    proj16_[i].resize(size_t(m * c.proj[i].out.cols));
    exec.bind_const(uint32_t(2 + i), g.packs[i].data(), g.packs[i].size());
    exec.bind(uint32_t(2 + k + i), proj16_[i].data(), proj16_[i].size() * 2);
  }
  TANDEM_ASSIGN_OR_RETURN(npu::ExecReport report, exec.run(g.program));
  for (size_t p = 0; p < k; ++p) {
    const Act& y = c.proj[p].out;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < y.cols; ++r) y.data[i * y.ld + r] = fp16_to_f32(proj16_[p][size_t(i * y.cols + r)]);
    converted_ += uint64_t(m * y.cols) * sizeof(float);
  }
  return report.seconds;
}

Result<std::unique_ptr<Completion>> NpuDevice::submit(const OpCall& c) {
  TANDEM_RETURN_IF_ERROR(validate_call(c));
  const std::string key = GraphSpec::of(c).key();
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    return Unsupported("npu: no prepared graph for " + key + " (the NPU runs static shapes only; prepare() it first)");
  }
  Result<double> seconds = std::holds_alternative<npu::oplib::PreparedMatmul>(it->second)
                               ? run_matmul(std::get<npu::oplib::PreparedMatmul>(it->second), c)
                           : std::holds_alternative<NormLinearGraph>(it->second)
                               ? run_norm_linear(std::get<NormLinearGraph>(it->second), c)
                           : std::holds_alternative<KvAppendGraph>(it->second)
                               ? run_kv_append(std::get<KvAppendGraph>(it->second), c)
                               : run_elementwise(std::get<ElementwiseGraph>(it->second), c);
  if (!seconds.ok()) return std::unique_ptr<Completion>(new FinishedCompletion(seconds.status(), 0.0));
  return std::unique_ptr<Completion>(new FinishedCompletion(Status::Ok(), *seconds));
}

}  // namespace tandem::devices
