#include "devices/opencl/cl_ops.h"

#include <climits>
#include <cmath>
#include <tuple>
#include <vector>

namespace tandem::opencl {
namespace {

template <class T>
cl_int set_arg(cl_kernel k, cl_uint i, const T& v) {
  return clSetKernelArg(k, i, sizeof(T), &v);
}

template <class... A>
Status set_args(cl_kernel k, const std::string& name, const A&... a) {
  cl_uint i = 0;
  cl_int err = CL_SUCCESS;
  ((err = err == CL_SUCCESS ? set_arg(k, i++, a) : err), ...);
  return cl_status(err, "clSetKernelArg", name);
}

size_t round_up(int64_t v, size_t m) { return (size_t(v) + m - 1) / m * m; }

cl_ulong f32_off(BufRef r) { return cl_ulong(r.offset / sizeof(float)); }

Status check_f32(BufRef r, const char* what) {
  if (!r.mem) return InvalidArgument(std::string("opencl: ") + what + ": no buffer");
  if (r.offset % sizeof(float) != 0) {
    return InvalidArgument(std::string("opencl: ") + what + ": offset " + std::to_string(r.offset) +
                           " is not a multiple of 4");
  }
  return Status::Ok();
}

Status check_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) return OutOfRange(std::string("opencl: ") + what + " = " + std::to_string(v) + " is out of range");
  return Status::Ok();
}

const char* type_suffix(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::Q8_0: return "q8_0";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_K: return "q4_k";
    case DType::Q5_K: return "q5_k";
    case DType::Q6_K: return "q6_k";
    default: return nullptr;  // no kernel: the partitioner places such a matmul on a device that has one
  }
}

}  // namespace

bool Ops::supports(DType t) { return type_suffix(t) != nullptr; }

Result<std::shared_ptr<Ops>> Ops::create(std::shared_ptr<Runtime> runtime) {
  if (!runtime) return InvalidArgument("opencl: Ops::create without a runtime");
  std::shared_ptr<Ops> ops(new Ops(std::move(runtime)));
  TANDEM_ASSIGN_OR_RETURN(ops->program_,
                          ops->rt_->build_program(kernel_source(), "-cl-std=CL1.2", "tandem kernels"));
  cl_uint n = 0;
  TANDEM_CL_CHECK(clCreateKernelsInProgram(ops->program_, 0, nullptr, &n), "clCreateKernelsInProgram");
  std::vector<cl_kernel> ks(n);
  TANDEM_CL_CHECK(clCreateKernelsInProgram(ops->program_, n, ks.data(), nullptr), "clCreateKernelsInProgram");
  for (cl_kernel k : ks) {
    size_t len = 0;
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &len);
    std::string name(len, '\0');
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, name.data(), nullptr);
    while (!name.empty() && name.back() == '\0') name.pop_back();
    ops->kernels_[name] = k;
  }
  return ops;
}

Ops::~Ops() {
  for (auto& [name, k] : kernels_) clReleaseKernel(k);
  if (program_) clReleaseProgram(program_);
}

Result<cl_kernel> Ops::kernel(const std::string& name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) return NotFound("opencl: kernel " + name + " is not in the program");
  return it->second;
}

namespace {

Status launch(cl_command_queue q, cl_kernel k, const std::string& name, cl_uint dims,
              const size_t* global, const size_t* local, Event* done) {
  for (cl_uint d = 0; d < dims; ++d)
    if (global[d] == 0) return Status::Ok();  // nothing to do
  cl_event ev = nullptr;
  TANDEM_RETURN_IF_ERROR(cl_status(
      clEnqueueNDRangeKernel(q, k, dims, nullptr, global, local, 0, nullptr, done ? &ev : nullptr),
      "clEnqueueNDRangeKernel", name));
  if (done) *done = Event(ev);
  return Status::Ok();
}

}  // namespace

#define TANDEM_KERNEL(var, name) \
  const std::string var##_name = (name); \
  TANDEM_ASSIGN_OR_RETURN(cl_kernel var, kernel(var##_name))

Status Ops::get_rows(const WeightRef& w, BufRef ids, int64_t n, BufRef y, int64_t ldy, Event* done, float scale) {
  if (!supports(w.type)) return Unsupported("opencl: get_rows: weight type " + std::string(dtype_name(w.type)));
  TANDEM_RETURN_IF_ERROR(check_f32(ids, "get_rows ids"));
  TANDEM_RETURN_IF_ERROR(check_f32(y, "get_rows y"));
  TANDEM_RETURN_IF_ERROR(check_int(n, "get_rows n"));
  TANDEM_RETURN_IF_ERROR(check_int(w.cols, "get_rows cols"));
  TANDEM_KERNEL(k, std::string("get_rows_") + type_suffix(w.type));
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, w.data.mem, cl_ulong(w.data.offset), cl_ulong(w.row_bytes),
                                  cl_int(w.cols), ids.mem, cl_ulong(ids.offset / 4), y.mem, f32_off(y),
                                  cl_int(ldy), cl_float(scale)));
  const size_t global[2] = {round_up(w.cols, 64), size_t(n)}, local[2] = {64, 1};
  return launch(rt_->queue(), k, k_name, 2, global, local, done);
}

Status Ops::matmul(const WeightRef& w, BufRef x, int64_t m, int64_t ldx, BufRef y, int64_t ldy, Event* done) {
  return m < kGemmMinRows ? gemv(w, x, m, ldx, y, ldy, done) : gemm(w, x, m, ldx, y, ldy, done);
}

static Status check_matmul(const WeightRef& w, BufRef x, int64_t m, BufRef y) {
  if (!Ops::supports(w.type)) return Unsupported("opencl: matmul: weight type " + std::string(dtype_name(w.type)));
  if (!w.data.mem) return InvalidArgument("opencl: matmul: no weight buffer");
  TANDEM_RETURN_IF_ERROR(check_f32(x, "matmul x"));
  TANDEM_RETURN_IF_ERROR(check_f32(y, "matmul y"));
  TANDEM_RETURN_IF_ERROR(check_int(m, "matmul m"));
  TANDEM_RETURN_IF_ERROR(check_int(w.rows, "matmul rows"));
  TANDEM_RETURN_IF_ERROR(check_int(w.cols, "matmul cols"));
  const uint32_t bs = dtype_traits(w.type).block_size;
  if (w.cols % bs != 0) {
    return InvalidArgument("opencl: matmul: cols " + std::to_string(w.cols) + " is not a multiple of the " +
                           std::string(dtype_name(w.type)) + " block size");
  }
  return Status::Ok();
}

Status Ops::gemv(const WeightRef& w, BufRef x, int64_t m, int64_t ldx, BufRef y, int64_t ldy, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_matmul(w, x, m, y));
  TANDEM_KERNEL(k, std::string("gemv_") + type_suffix(w.type));
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, w.data.mem, cl_ulong(w.data.offset), cl_ulong(w.row_bytes),
                                  cl_int(w.rows), cl_int(w.cols), x.mem, f32_off(x), cl_int(ldx), y.mem,
                                  f32_off(y), cl_int(ldy)));
  // GEMV_ROWS (4) output rows per work-group of 64 items (kernels/matmul.cl).
  const size_t global[2] = {round_up(w.rows, 4) / 4 * 64, size_t(m)}, local[2] = {64, 1};
  return launch(rt_->queue(), k, k_name, 2, global, local, done);
}

Status Ops::gemm(const WeightRef& w, BufRef x, int64_t m, int64_t ldx, BufRef y, int64_t ldy, Event* done,
                 GemmForm form) {
  TANDEM_RETURN_IF_ERROR(check_matmul(w, x, m, y));
  if (form == GemmForm::kAuto) form = rt_->caps().is_cpu ? GemmForm::kRegisterBlocked : GemmForm::kLocalTiled;
  if (form == GemmForm::kRegisterBlocked) {
    TANDEM_KERNEL(k, std::string("gemm_rb_") + type_suffix(w.type));
    TANDEM_RETURN_IF_ERROR(set_args(k, k_name, w.data.mem, cl_ulong(w.data.offset), cl_ulong(w.row_bytes),
                                    cl_int(w.rows), cl_int(w.cols), x.mem, f32_off(x), cl_int(ldx), y.mem,
                                    f32_off(y), cl_int(ldy), cl_int(m)));
    // One item per output row and GEMM_RB (8) input rows (kernels/matmul.cl).
    // A fixed work-group size keeps the driver from compiling a variant per launch shape.
    const size_t global[2] = {round_up(w.rows, 64), round_up(m, 8) / 8}, local[2] = {64, 1};
    return launch(rt_->queue(), k, k_name, 2, global, local, done);
  }
  TANDEM_KERNEL(k, std::string("gemm_") + type_suffix(w.type));
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, w.data.mem, cl_ulong(w.data.offset), cl_ulong(w.row_bytes),
                                  cl_int(w.rows), cl_int(w.cols), x.mem, f32_off(x), cl_int(ldx), y.mem,
                                  f32_off(y), cl_int(ldy), cl_int(m)));
  const size_t global[2] = {round_up(w.rows, 16), round_up(m, 16)}, local[2] = {16, 16};
  return launch(rt_->queue(), k, k_name, 2, global, local, done);
}

Status Ops::rmsnorm(BufRef x, BufRef weight, BufRef y, int64_t n, int64_t dim, float eps, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(x, "rmsnorm x"));
  TANDEM_RETURN_IF_ERROR(check_f32(weight, "rmsnorm weight"));
  TANDEM_RETURN_IF_ERROR(check_f32(y, "rmsnorm y"));
  TANDEM_RETURN_IF_ERROR(check_int(dim, "rmsnorm dim"));
  TANDEM_KERNEL(k, "rmsnorm");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, x.mem, f32_off(x), weight.mem, f32_off(weight), y.mem, f32_off(y),
                                  cl_int(dim), cl_float(eps)));
  const size_t global[1] = {size_t(n) * 64}, local[1] = {64};
  return launch(rt_->queue(), k, k_name, 1, global, local, done);
}

Status Ops::add_inplace(BufRef x, BufRef y, int64_t count, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(x, "add x"));
  TANDEM_RETURN_IF_ERROR(check_f32(y, "add y"));
  TANDEM_RETURN_IF_ERROR(check_int(count, "add count"));
  TANDEM_KERNEL(k, "add_inplace");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, x.mem, f32_off(x), y.mem, f32_off(y), cl_int(count)));
  const size_t global[1] = {round_up(count, 64)}, local[1] = {64};
  return launch(rt_->queue(), k, k_name, 1, global, local, done);
}

Status Ops::add_bias(BufRef x, BufRef bias, int64_t n, int64_t dim, int64_t ld, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(x, "add_bias x"));
  TANDEM_RETURN_IF_ERROR(check_f32(bias, "add_bias bias"));
  TANDEM_RETURN_IF_ERROR(check_int(n, "add_bias n"));
  TANDEM_KERNEL(k, "add_bias");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, x.mem, f32_off(x), bias.mem, f32_off(bias), cl_int(dim), cl_int(ld)));
  const size_t global[2] = {round_up(dim, 64), size_t(n)}, local[2] = {64, 1};
  return launch(rt_->queue(), k, k_name, 2, global, local, done);
}

Status Ops::signal_flag(BufRef flag, uint64_t value, Event* done) {
  if (flag.offset % 8 != 0) return InvalidArgument("opencl: signal_flag: flag offset " + std::to_string(flag.offset) + " is not 8-byte aligned");
  TANDEM_KERNEL(k, "signal_flag");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, flag.mem, cl_ulong(flag.offset / 8), cl_ulong(value)));
  const size_t global[1] = {1}, local[1] = {1};
  return launch(rt_->queue(), k, k_name, 1, global, local, done);
}

Status Ops::gated_inplace(const std::string& kernel_name, BufRef gate, BufRef up, int64_t count, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(gate, (kernel_name + " gate").c_str()));
  TANDEM_RETURN_IF_ERROR(check_f32(up, (kernel_name + " up").c_str()));
  TANDEM_RETURN_IF_ERROR(check_int(count, (kernel_name + " count").c_str()));
  TANDEM_KERNEL(k, kernel_name);
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, gate.mem, f32_off(gate), up.mem, f32_off(up), cl_int(count)));
  const size_t global[1] = {round_up(count, 64)}, local[1] = {64};
  return launch(rt_->queue(), k, k_name, 1, global, local, done);
}

Status Ops::swiglu_inplace(BufRef gate, BufRef up, int64_t count, Event* done) {
  return gated_inplace("swiglu", gate, up, count, done);
}

Status Ops::geglu_inplace(BufRef gate, BufRef up, int64_t count, Event* done) {
  return gated_inplace("geglu", gate, up, count, done);
}

Status Ops::softcap_inplace(BufRef x, int64_t count, float cap, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(x, "softcap x"));
  TANDEM_RETURN_IF_ERROR(check_int(count, "softcap count"));
  if (!(cap > 0)) return InvalidArgument("opencl: softcap: cap " + std::to_string(cap) + " must be > 0");
  TANDEM_KERNEL(k, "softcap");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, x.mem, f32_off(x), cl_int(count), cl_float(cap)));
  const size_t global[1] = {round_up(count, 64)}, local[1] = {64};
  return launch(rt_->queue(), k, k_name, 1, global, local, done);
}

Status Ops::rope_inplace(BufRef x, int64_t n, int64_t ld, int n_heads, int head_dim, BufRef cos_table,
                         BufRef sin_table, bool half_split, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(x, "rope x"));
  TANDEM_RETURN_IF_ERROR(check_f32(cos_table, "rope cos"));
  TANDEM_RETURN_IF_ERROR(check_f32(sin_table, "rope sin"));
  if (head_dim % 2 != 0) return InvalidArgument("opencl: rope: odd head_dim " + std::to_string(head_dim));
  TANDEM_KERNEL(k, "rope");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, x.mem, f32_off(x), cl_int(ld), cl_int(head_dim), cos_table.mem,
                                  f32_off(cos_table), sin_table.mem, f32_off(sin_table), cl_int(half_split ? 1 : 0)));
  const size_t global[3] = {size_t(head_dim / 2), size_t(n_heads), size_t(n)};
  return launch(rt_->queue(), k, k_name, 3, global, nullptr, done);
}

Status Ops::softmax_rows(BufRef x, int64_t rows, int64_t valid, int64_t len, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(x, "softmax x"));
  TANDEM_RETURN_IF_ERROR(check_int(len, "softmax len"));
  if (valid < 1 || valid > len) return InvalidArgument("opencl: softmax: valid must be in 1..len");
  TANDEM_KERNEL(k, "softmax_rows");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, x.mem, f32_off(x), cl_int(valid), cl_int(len)));
  const size_t global[1] = {size_t(rows) * 64}, local[1] = {64};
  return launch(rt_->queue(), k, k_name, 1, global, local, done);
}

Status Ops::kv_store(BufRef k_rows, BufRef v_rows, BufRef k_cache, BufRef v_cache, int64_t n, int kv_dim, int T,
                     int n_past, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(k_rows, "kv_store k"));
  TANDEM_RETURN_IF_ERROR(check_f32(v_rows, "kv_store v"));
  TANDEM_RETURN_IF_ERROR(check_f32(k_cache, "kv_store k cache"));
  TANDEM_RETURN_IF_ERROR(check_f32(v_cache, "kv_store v cache"));
  if (n_past < 0 || n_past + n > T) return OutOfRange("opencl: kv_store: positions past the cache");
  TANDEM_KERNEL(k, "kv_store");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, k_rows.mem, f32_off(k_rows), v_rows.mem, f32_off(v_rows), k_cache.mem,
                                  f32_off(k_cache), v_cache.mem, f32_off(v_cache), cl_int(kv_dim), cl_int(T),
                                  cl_int(n_past)));
  const size_t global[2] = {size_t(kv_dim), size_t(n)};
  return launch(rt_->queue(), k, k_name, 2, global, nullptr, done);
}

Status Ops::attention(BufRef q, int64_t ldq, BufRef k_cache, BufRef v_cache, BufRef out, int64_t ldo, int64_t n,
                      int n_heads, int n_kv_heads, int head_dim, int T, int n_past, Event* done,
                      const AttentionScores& how) {
  TANDEM_RETURN_IF_ERROR(check_f32(q, "attention q"));
  TANDEM_RETURN_IF_ERROR(check_f32(k_cache, "attention k cache"));
  TANDEM_RETURN_IF_ERROR(check_f32(v_cache, "attention v cache"));
  TANDEM_RETURN_IF_ERROR(check_f32(out, "attention out"));
  if (head_dim < 1 || head_dim > kMaxHeadDim) {
    return Unsupported("opencl: attention: head_dim " + std::to_string(head_dim) + " > " + std::to_string(kMaxHeadDim));
  }
  if (n_kv_heads < 1 || n_heads % n_kv_heads != 0) return InvalidArgument("opencl: attention: n_heads % n_kv_heads != 0");
  if (n_past < 0 || n_past + n > T) return OutOfRange("opencl: attention: positions past the cache");
  TANDEM_KERNEL(k, "attention");
  const float scale = how.scale != 0 ? how.scale : 1.0f / std::sqrt(float(head_dim));
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, q.mem, f32_off(q), cl_int(ldq), k_cache.mem, f32_off(k_cache),
                                  v_cache.mem, f32_off(v_cache), out.mem, f32_off(out), cl_int(ldo), cl_int(head_dim),
                                  cl_int(n_kv_heads * head_dim), cl_int(n_heads / n_kv_heads), cl_int(T),
                                  cl_int(n_past), cl_float(scale), cl_float(how.softcap), cl_int(how.window)));
  const size_t global[2] = {size_t(n_heads) * 64, size_t(n)}, local[2] = {64, 1};
  return launch(rt_->queue(), k, k_name, 2, global, local, done);
}

namespace {

// The kernels' type codes (KV_* in kernels/ops.cl).
cl_int kv_type_code(DType t) { return t == DType::F32 ? 0 : t == DType::F16 ? 1 : 2; }

// Byte strides of one cache of g (g.type's elements): token to token, head to head.
struct KvStrides {
  cl_ulong token, head;
};
KvStrides kv_strides(const KvGeometry& g) { return {cl_ulong(g.token_stride_bytes()), cl_ulong(kv_offset(g, 0, 1))}; }

// The checks both typed-cache ops share: types, shape, positions and the pages' alignment.
Status check_kv_pages(const char* op, const KvGeometry& g, BufRef k_pages, BufRef v_pages, int64_t n, int n_past) {
  const std::string what = std::string("opencl: ") + op + ": ";
  if (!Ops::supports_kv(g)) {
    return Unsupported(what + "KV types " + std::string(dtype_name(g.type)) + "/" + std::string(dtype_name(g.v_type)) +
                       " (the kernels read f32, f16, q8_0)");
  }
  if (g.capacity == 0 || g.heads == 0 || g.head_dim == 0) return InvalidArgument(what + "empty KV geometry");
  TANDEM_RETURN_IF_ERROR(check_kv_type(g.type, g.head_dim, what + "keys"));
  TANDEM_RETURN_IF_ERROR(check_kv_type(g.v_type, g.head_dim, what + "values"));
  TANDEM_RETURN_IF_ERROR(check_int(n, (std::string(op) + " n").c_str()));
  if (n_past < 0 || int64_t(n_past) + n > int64_t(g.capacity)) {
    return OutOfRange(what + "positions " + std::to_string(n_past) + ".." + std::to_string(int64_t(n_past) + n) +
                      " past the cache's " + std::to_string(g.capacity));
  }
  for (const auto& [ref, t, name] : {std::tuple{k_pages, g.type, "keys"}, std::tuple{v_pages, g.v_type, "values"}}) {
    if (!ref.mem) return InvalidArgument(what + name + ": no buffer");
    const size_t align = t == DType::F32 ? 4 : 2;  // f32 elements; fp16 elements and q8_0 scales
    if (ref.offset % align != 0) {
      return InvalidArgument(what + name + ": offset " + std::to_string(ref.offset) + " is not a multiple of " +
                             std::to_string(align) + " (" + std::string(dtype_name(t)) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

bool Ops::supports_kv(const KvGeometry& g) { return is_kv_type(g.type) && is_kv_type(g.v_type); }

Status Ops::kv_store_pages(BufRef k_rows, int64_t ldk, BufRef v_rows, int64_t ldv, int64_t n, const KvGeometry& g,
                           BufRef k_pages, BufRef v_pages, int n_past, Event* done) {
  TANDEM_RETURN_IF_ERROR(check_f32(k_rows, "kv_store_pages k"));
  TANDEM_RETURN_IF_ERROR(check_f32(v_rows, "kv_store_pages v"));
  TANDEM_RETURN_IF_ERROR(check_kv_pages("kv_store_pages", g, k_pages, v_pages, n, n_past));
  if (ldk < int64_t(g.width()) || ldv < int64_t(g.width())) {
    return InvalidArgument("opencl: kv_store_pages: row strides " + std::to_string(ldk) + "/" + std::to_string(ldv) +
                           " below the KV width " + std::to_string(g.width()));
  }
  TANDEM_RETURN_IF_ERROR(check_int(ldk, "kv_store_pages ldk"));
  TANDEM_RETURN_IF_ERROR(check_int(ldv, "kv_store_pages ldv"));
  const KvGeometry gv = g.values();
  const KvStrides ks = kv_strides(g), vs = kv_strides(gv);
  TANDEM_KERNEL(k, "kv_store_pages");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, k_rows.mem, f32_off(k_rows), cl_int(ldk), v_rows.mem, f32_off(v_rows),
                                  cl_int(ldv), k_pages.mem, cl_ulong(k_pages.offset), ks.token, ks.head,
                                  kv_type_code(g.type), v_pages.mem, cl_ulong(v_pages.offset), vs.token, vs.head,
                                  kv_type_code(gv.type), cl_int(g.head_dim), cl_int(n_past)));
  // One item per 32 elements of a head's row (a q8_0 block) x head x row.
  const size_t global[3] = {(size_t(g.head_dim) + 31) / 32, size_t(g.heads), size_t(n)};
  return launch(rt_->queue(), k, k_name, 3, global, nullptr, done);
}

Status Ops::attention_pages(BufRef q, int64_t ldq, const KvGeometry& g, BufRef k_pages, BufRef v_pages, BufRef out,
                            int64_t ldo, int64_t n, int n_heads, int n_past, Event* done, const AttentionScores& how) {
  TANDEM_RETURN_IF_ERROR(check_f32(q, "attention_pages q"));
  TANDEM_RETURN_IF_ERROR(check_f32(out, "attention_pages out"));
  TANDEM_RETURN_IF_ERROR(check_kv_pages("attention_pages", g, k_pages, v_pages, n, n_past));
  const int head_dim = int(g.head_dim), kv_heads = int(g.heads);
  if (head_dim > kMaxHeadDim) {
    return Unsupported("opencl: attention_pages: head_dim " + std::to_string(head_dim) + " > " +
                       std::to_string(kMaxHeadDim));
  }
  if (n_heads < 1 || n_heads % kv_heads != 0) {
    return InvalidArgument("opencl: attention_pages: " + std::to_string(n_heads) + " query heads do not share " +
                           std::to_string(kv_heads) + " KV heads evenly");
  }
  if (ldq < int64_t(n_heads) * head_dim || ldo < int64_t(n_heads) * head_dim) {
    return InvalidArgument("opencl: attention_pages: row strides " + std::to_string(ldq) + "/" + std::to_string(ldo) +
                           " below " + std::to_string(n_heads) + " heads x " + std::to_string(head_dim));
  }
  TANDEM_RETURN_IF_ERROR(check_int(ldq, "attention_pages ldq"));
  TANDEM_RETURN_IF_ERROR(check_int(ldo, "attention_pages ldo"));
  const KvGeometry gv = g.values();
  const KvStrides ks = kv_strides(g), vs = kv_strides(gv);
  const float scale = how.scale != 0 ? how.scale : 1.0f / std::sqrt(float(head_dim));
  TANDEM_KERNEL(k, "attention_pages");
  TANDEM_RETURN_IF_ERROR(set_args(k, k_name, q.mem, f32_off(q), cl_int(ldq), k_pages.mem, cl_ulong(k_pages.offset),
                                  ks.token, ks.head, kv_type_code(g.type), v_pages.mem, cl_ulong(v_pages.offset),
                                  vs.token, vs.head, kv_type_code(gv.type), out.mem, f32_off(out), cl_int(ldo),
                                  cl_int(head_dim), cl_int(n_heads / kv_heads), cl_int(n_past), cl_float(scale),
                                  cl_float(how.softcap), cl_int(how.window)));
  const size_t global[2] = {size_t(n_heads) * 64, size_t(n)}, local[2] = {64, 1};
  return launch(rt_->queue(), k, k_name, 2, global, local, done);
}

}  // namespace tandem::opencl
