// Each OpenCL kernel against the CPU device's implementation of the same op (tandem::cpu), on
// random inputs over shapes that are not multiples of the work-group sizes: NMSE under a
// per-op/type budget, no NaN/Inf, and untouched sentinels around every output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/ops.h"
#include "tests/opencl/cl_test_util.h"

namespace tandem::opencl {
namespace {

using testing::all_finite;
using testing::GuardedBuffer;
using testing::nmse;
using testing::random_floats;

// Both sides compute in fp32 from the same dequantized weights; only summation order differs
// (relative error ~1e-7 per output, NMSE ~1e-13). The budgets leave two orders of margin and
// still catch a wrong scale, nibble order or index (which give NMSE >= 1e-3).
double matmul_budget(DType) { return 1e-10; }
constexpr double kElementwiseBudget = 1e-12;  // same formula, at most an ulp or two apart
constexpr double kTranscendentalBudget = 1e-11;  // exp / sqrt differ from the CPU's in the last bits

// A weight of rows x cols in `type`, from random floats, as GGUF bytes.
std::vector<uint8_t> make_weight(DType type, int64_t rows, int64_t cols, unsigned seed) {
  const std::vector<float> f = random_floats(size_t(rows * cols), seed);
  const size_t rb = row_bytes(type, size_t(cols));
  std::vector<uint8_t> out(rb * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = f.data() + r * cols;
    uint8_t* dst = out.data() + size_t(r) * rb;
    switch (type) {
      case DType::F32: std::memcpy(dst, src, rb); break;
      case DType::F16:
        for (int64_t k = 0; k < cols; ++k) reinterpret_cast<fp16_t*>(dst)[k] = f32_to_fp16(src[k]);
        break;
      case DType::BF16:
        for (int64_t k = 0; k < cols; ++k) reinterpret_cast<bf16_t*>(dst)[k] = f32_to_bf16(src[k]);
        break;
      default: quantize_row(type, src, dst, size_t(cols)); break;
    }
  }
  return out;
}

void expect_output(const GuardedBuffer& got, const float* want, size_t n, double budget, const std::string& what) {
  EXPECT_TRUE(all_finite(got.data(), n)) << what << ": NaN or Inf in the output";
  EXPECT_TRUE(got.guards_intact()) << what << ": a kernel wrote outside its output";
  const double e = nmse(got.data(), want, n);
  EXPECT_LE(e, budget) << what;
  std::printf("[opencl] %-44s nmse %.3g\n", what.c_str(), e);
}

constexpr DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

struct MatmulShape {
  int64_t m, rows, cols;
};

TEST(OpenclOps, MatmulGemvAndGemmMatchCpuForEveryType) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  const cpu::GemmPrecision saved = cpu::gemm_precision();
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);  // the OpenCL kernels are fp32 throughout
  const MatmulShape shapes[] = {{1, 37, 64}, {1, 130, 320}, {2, 65, 96}, {3, 100, 160},
                                {5, 67, 128}, {17, 33, 320}, {40, 129, 64},
                                // rows of whole K-quant super-blocks
                                {1, 37, 256}, {3, 65, 768}, {17, 33, 512}, {40, 129, 256}};
  for (DType type : kTypes) {
    for (const MatmulShape& s : shapes) {
      if (s.cols % int64_t(dtype_traits(type).block_size) != 0) continue;
      const std::vector<uint8_t> wbytes = make_weight(type, s.rows, s.cols, unsigned(s.rows * 31 + s.cols));
      GuardedBuffer w(rt, wbytes.data(), wbytes.size());
      const int64_t ldx = s.cols + 3, ldy = s.rows + 5;
      GuardedBuffer x(rt, size_t(s.m * ldx));
      const std::vector<float> xs = random_floats(size_t(s.m * ldx), unsigned(s.m + 7));
      std::memcpy(x.data(), xs.data(), xs.size() * sizeof(float));
      const cpu::WeightView wv{type, w.data(), s.rows, s.cols, row_bytes(type, size_t(s.cols))};
      const WeightRef wr{type, w.ref(), s.rows, s.cols, wv.row_bytes};
      std::vector<float> want(size_t(s.m * ldy), 0.0f);
      cpu::matmul(testing::cpu_pool(), wv, x.data(), s.m, ldx, want.data(), ldy);
      for (int form = 0; form < 3; ++form) {
        GuardedBuffer y(rt, size_t(s.m * ldy));
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t r = 0; r < s.rows; ++r) y.data()[i * ldy + r] = 0.0f;  // padding keeps its sentinel
        const Status st =
            form == 0 ? ops->gemv(wr, x.ref(), s.m, ldx, y.ref(), ldy)
                      : ops->gemm(wr, x.ref(), s.m, ldx, y.ref(), ldy, nullptr,
                                  form == 1 ? GemmForm::kLocalTiled : GemmForm::kRegisterBlocked);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_TRUE(rt.finish().ok());
        // Compare the rows x m block only; the row padding must still hold the sentinel.
        std::vector<float> got, ref;
        bool padding_ok = true;
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t r = 0; r < ldy; ++r) {
            const float g = y.data()[i * ldy + r];
            if (r < s.rows) {
              got.push_back(g);
              ref.push_back(want[size_t(i * ldy + r)]);
            } else if (g != GuardedBuffer::kSentinel) {
              padding_ok = false;
            }
          }
        }
        const std::string what = std::string(form == 0 ? "gemv " : form == 1 ? "gemm-local " : "gemm-rb ") + std::string(dtype_name(type)) +
                                 " m" + std::to_string(s.m) + " " + std::to_string(s.rows) + "x" +
                                 std::to_string(s.cols);
        EXPECT_TRUE(padding_ok) << what << ": wrote into the ldy padding";
        EXPECT_TRUE(y.guards_intact()) << what;
        EXPECT_TRUE(all_finite(got.data(), got.size())) << what;
        const double e = nmse(got.data(), ref.data(), got.size());
        EXPECT_LE(e, matmul_budget(type)) << what;
        if (s.m == 5 || s.m == 1) std::printf("[opencl] %-44s nmse %.3g\n", what.c_str(), e);
      }
    }
  }
  cpu::set_gemm_precision(saved);
}

TEST(OpenclOps, GetRowsMatchesDequantizeRow) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  const int64_t rows = 50, ldy = 520;
  const std::vector<int32_t> ids{0, 49, 7, 7, 23};
  for (DType type : kTypes) {
    const int64_t cols = dtype_traits(type).block_size == 256 ? 512 : 96;
    const std::vector<uint8_t> wbytes = make_weight(type, rows, cols, 99);
    GuardedBuffer w(rt, wbytes.data(), wbytes.size());
    GuardedBuffer idb(rt, ids.data(), ids.size() * sizeof(int32_t));
    GuardedBuffer y(rt, ids.size() * ldy);
    const cpu::WeightView wv{type, w.data(), rows, cols, row_bytes(type, size_t(cols))};
    std::vector<float> want(ids.size() * ldy, GuardedBuffer::kSentinel);
    for (size_t i = 0; i < ids.size(); ++i) cpu::dequantize_row(wv, ids[i], want.data() + i * ldy);
    ASSERT_TRUE(ops->get_rows({type, w.ref(), rows, cols, wv.row_bytes}, idb.ref(), int64_t(ids.size()), y.ref(), ldy).ok());
    ASSERT_TRUE(rt.finish().ok());
    EXPECT_EQ(std::memcmp(y.data(), want.data(), want.size() * sizeof(float)), 0) << dtype_name(type);
    EXPECT_TRUE(y.guards_intact());
    std::printf("[opencl] %-44s bit-exact\n", ("get_rows " + std::string(dtype_name(type))).c_str());
  }
}

TEST(OpenclOps, RmsNormMatchesCpu) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  for (auto [n, dim] : {std::pair{1, 64}, {5, 100}, {3, 1000}, {2, 7}}) {
    const size_t count = size_t(n * dim);
    GuardedBuffer x(rt, count), w(rt, size_t(dim)), y(rt, count);
    auto xs = random_floats(count, 3, -2, 2), ws = random_floats(size_t(dim), 4, 0.5, 1.5);
    std::memcpy(x.data(), xs.data(), count * 4);
    std::memcpy(w.data(), ws.data(), size_t(dim) * 4);
    std::vector<float> want(count);
    cpu::rmsnorm(testing::cpu_pool(), x.data(), w.data(), want.data(), n, dim, 1e-5f);
    ASSERT_TRUE(ops->rmsnorm(x.ref(), w.ref(), y.ref(), n, dim, 1e-5f).ok());
    ASSERT_TRUE(rt.finish().ok());
    expect_output(y, want.data(), count, kTranscendentalBudget,
                  "rmsnorm " + std::to_string(n) + "x" + std::to_string(dim));
  }
}

TEST(OpenclOps, ElementwiseOpsMatchCpu) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  for (int count : {1, 1000, 4097}) {
    auto a = random_floats(size_t(count), 5, -4, 4), b = random_floats(size_t(count), 6, -4, 4);
    {  // add
      GuardedBuffer x(rt, a.data(), a.size() * 4), y(rt, b.data(), b.size() * 4);
      std::vector<float> want = a;
      cpu::add_inplace(want.data(), b.data(), count);
      ASSERT_TRUE(ops->add_inplace(x.ref(), y.ref(), count).ok());
      ASSERT_TRUE(rt.finish().ok());
      expect_output(x, want.data(), size_t(count), kElementwiseBudget, "add " + std::to_string(count));
    }
    {  // swiglu
      GuardedBuffer g(rt, a.data(), a.size() * 4), u(rt, b.data(), b.size() * 4);
      std::vector<float> want = a;
      cpu::swiglu_inplace(want.data(), b.data(), count);
      ASSERT_TRUE(ops->swiglu_inplace(g.ref(), u.ref(), count).ok());
      ASSERT_TRUE(rt.finish().ok());
      expect_output(g, want.data(), size_t(count), kTranscendentalBudget, "swiglu " + std::to_string(count));
    }
  }
  // bias over rows with a padded stride
  const int n = 3, dim = 70, ld = 75;
  auto xs = random_floats(size_t(n * ld), 8), bs = random_floats(size_t(dim), 9);
  GuardedBuffer x(rt, xs.data(), xs.size() * 4), bias(rt, bs.data(), bs.size() * 4);
  std::vector<float> want = xs;
  cpu::add_bias(want.data(), bs.data(), n, dim, ld);
  ASSERT_TRUE(ops->add_bias(x.ref(), bias.ref(), n, dim, ld).ok());
  ASSERT_TRUE(rt.finish().ok());
  expect_output(x, want.data(), size_t(n * ld), kElementwiseBudget, "add_bias 3x70 ld75");
}

TEST(OpenclOps, RopeBothPairingsMatchCpu) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  for (bool half_split : {false, true}) {
    for (auto [n, heads, hd] : {std::tuple{1, 4, 64}, {5, 3, 10}, {7, 2, 128}}) {
      const int ld = heads * hd + 6, half = hd / 2;
      auto xs = random_floats(size_t(n * ld), 10);
      std::vector<float> cs(size_t(n * half)), sn(size_t(n * half));
      for (int r = 0; r < n; ++r)
        for (int i = 0; i < half; ++i) {
          const double th = (r + 3) * std::pow(10000.0, -2.0 * i / hd);
          cs[size_t(r * half + i)] = float(std::cos(th));
          sn[size_t(r * half + i)] = float(std::sin(th));
        }
      GuardedBuffer x(rt, xs.data(), xs.size() * 4), c(rt, cs.data(), cs.size() * 4), s(rt, sn.data(), sn.size() * 4);
      std::vector<float> want = xs;
      cpu::rope_inplace(want.data(), n, ld, heads, hd, cs.data(), sn.data(), half_split);
      ASSERT_TRUE(ops->rope_inplace(x.ref(), n, ld, heads, hd, c.ref(), s.ref(), half_split).ok());
      ASSERT_TRUE(rt.finish().ok());
      expect_output(x, want.data(), xs.size(), kElementwiseBudget,
                    std::string("rope ") + (half_split ? "half-split " : "adjacent ") + std::to_string(n) + "x" +
                        std::to_string(heads) + "x" + std::to_string(hd));
    }
  }
}

TEST(OpenclOps, SoftmaxMatchesCpu) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  for (auto [rows, valid, len] : {std::tuple{1, 1, 1}, {3, 37, 50}, {2, 200, 200}, {4, 65, 130}}) {
    auto xs = random_floats(size_t(rows * len), 11, -8, 8);
    GuardedBuffer x(rt, xs.data(), xs.size() * 4);
    std::vector<float> want = xs;
    for (int r = 0; r < rows; ++r) cpu::softmax_row(want.data() + r * len, valid, len);
    ASSERT_TRUE(ops->softmax_rows(x.ref(), rows, valid, len).ok());
    ASSERT_TRUE(rt.finish().ok());
    expect_output(x, want.data(), xs.size(), kTranscendentalBudget,
                  "softmax " + std::to_string(rows) + "x" + std::to_string(valid) + "/" + std::to_string(len));
  }
}

// The CPU path's attention (cpu::attention) written with the cpu ops: scores = q.k * scale,
// causal softmax, p x V over the transposed values.
void attention_reference(const float* q, int ldq, const float* kc, const float* vc, float* out, int ldo, int n,
                         int n_heads, int n_kv_heads, int hd, int T, int n_past) {
  const int kv_dim = n_kv_heads * hd, group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(float(hd));
  std::vector<float> row(size_t(n_past + n));
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < n_heads; ++h) {
      const int kvh = h / group, visible = n_past + i + 1;
      for (int j = 0; j < visible; ++j) row[size_t(j)] = cpu::dot(q + i * ldq + h * hd, kc + j * kv_dim + kvh * hd, hd) * scale;
      cpu::softmax_row(row.data(), visible, visible);
      for (int d = 0; d < hd; ++d)
        out[i * ldo + h * hd + d] = cpu::dot(row.data(), vc + size_t(kvh * hd + d) * T, visible);
    }
}

TEST(OpenclOps, KvStoreAndCausalGqaAttentionMatchCpu) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  struct C {
    int n, n_past, n_heads, n_kv_heads, hd, T;
  };
  for (const C c : {C{7, 0, 4, 2, 16, 50}, C{1, 20, 4, 2, 16, 50}, C{5, 13, 4, 4, 64, 40}, C{3, 70, 6, 2, 32, 100},
                    C{1, 130, 8, 1, 128, 140}}) {
    const int kv_dim = c.n_kv_heads * c.hd, dim = c.n_heads * c.hd, T = c.T;
    // Cache already holding n_past positions, plus the new rows to store.
    auto kc0 = random_floats(size_t(T * kv_dim), 12), vc0 = random_floats(size_t(kv_dim * T), 13);
    auto kn = random_floats(size_t(c.n * kv_dim), 14), vn = random_floats(size_t(c.n * kv_dim), 15);
    auto qs = random_floats(size_t(c.n * dim), 16, -2, 2);
    GuardedBuffer kc(rt, kc0.data(), kc0.size() * 4), vc(rt, vc0.data(), vc0.size() * 4);
    GuardedBuffer k(rt, kn.data(), kn.size() * 4), v(rt, vn.data(), vn.size() * 4), q(rt, qs.data(), qs.size() * 4);
    GuardedBuffer out(rt, size_t(c.n * dim));
    std::vector<float> kw = kc0, vw = vc0, want(size_t(c.n * dim));
    std::memcpy(kw.data() + size_t(c.n_past) * kv_dim, kn.data(), kn.size() * 4);
    for (int i = 0; i < c.n; ++i)
      for (int d = 0; d < kv_dim; ++d) vw[size_t(d) * T + c.n_past + i] = vn[size_t(i * kv_dim + d)];
    attention_reference(qs.data(), dim, kw.data(), vw.data(), want.data(), dim, c.n, c.n_heads, c.n_kv_heads, c.hd,
                        T, c.n_past);
    ASSERT_TRUE(ops->kv_store(k.ref(), v.ref(), kc.ref(), vc.ref(), c.n, kv_dim, T, c.n_past).ok());
    const Status st = ops->attention(q.ref(), dim, kc.ref(), vc.ref(), out.ref(), dim, c.n, c.n_heads, c.n_kv_heads,
                                     c.hd, T, c.n_past);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(rt.finish().ok());
    char tag_buf[96];
    std::snprintf(tag_buf, sizeof tag_buf, "n%d past%d h%d/%d hd%d", c.n, c.n_past, c.n_heads, c.n_kv_heads, c.hd);
    const std::string tag(tag_buf);
    expect_output(kc, kw.data(), kw.size(), 0.0, "kv_store keys " + tag);
    expect_output(vc, vw.data(), vw.size(), 0.0, "kv_store values " + tag);
    expect_output(out, want.data(), want.size(), kTranscendentalBudget, "attention " + tag);
  }
}

TEST(OpenclOps, ErrorsAreOneLineStatusesNamingTheCall) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  auto bad = rt.build_program("__kernel void k(__global float* x) { x[0] = undefined_thing; }", "", "probe");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("opencl: clBuildProgram probe: CL_BUILD_PROGRAM_FAILURE"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("undefined_thing"), std::string::npos) << "build log missing";
  EXPECT_EQ(cl_error_name(-52), "CL_INVALID_KERNEL_ARGS");
  EXPECT_EQ(cl_status(-5, "clEnqueueNDRangeKernel", "gemv_q4_0").message(),
            "opencl: clEnqueueNDRangeKernel (kernel gemv_q4_0): CL_OUT_OF_RESOURCES (-5)");
  // Misaligned offsets are refused before reaching the driver.
  GuardedBuffer x(rt, 64);
  EXPECT_FALSE(ops->add_inplace(x.ref().at(2), x.ref(), 4).ok());
}

TEST(OpenclRuntime, ReportsCapsAndWrapsWithoutCopying) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  const DeviceCaps& c = rt.caps();
  EXPECT_FALSE(c.name.empty());
  EXPECT_GT(c.compute_units, 0u);
  EXPECT_GT(c.max_work_group_size, 0u);
  std::printf("[opencl] caps: %s\n", c.describe().c_str());
  GuardedBuffer b(rt, 1000);
  if (c.host_unified_memory) {
    EXPECT_TRUE(b.zero_copy());
    EXPECT_EQ(rt.bytes_copied(), 0u);
  }
}

}  // namespace
}  // namespace tandem::opencl

namespace tandem::opencl {
namespace {

TEST(OpenclRuntime, DeviceFilterThatMatchesNothingIsAClearError) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  RuntimeOptions o;
  o.device_filter = "no-such-opencl-device-xyz";
  auto rt = Runtime::create(o);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), StatusCode::kNotFound);
  EXPECT_NE(rt.status().message().find("no device matches TANDEM_OPENCL_DEVICE=\"no-such-opencl-device-xyz\""),
            std::string::npos)
      << rt.status().message();
}

}  // namespace
}  // namespace tandem::opencl
