// Per-op device time on this OpenCL device (profiling events), printed for a glance: not a
// benchmark (a few repetitions, small shapes) and it asserts nothing about speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/quant.h"
#include "tests/opencl/cl_test_util.h"

namespace tandem::opencl {
namespace {

using testing::GuardedBuffer;

// Median device time of `reps` runs of one enqueue, in microseconds.
double median_us(Runtime& rt, int reps, const std::function<Status(Event*)>& enqueue) {
  std::vector<double> t;
  for (int i = 0; i < reps + 1; ++i) {  // the first run includes the kernel's lazy compile
    Event ev;
    EXPECT_TRUE(enqueue(&ev).ok());
    EXPECT_TRUE(ev.wait().ok());
    auto ns = ev.elapsed_ns();
    EXPECT_TRUE(ns.ok());
    if (i > 0 && ns.ok()) t.push_back(double(*ns) / 1e3);
  }
  std::sort(t.begin(), t.end());
  return t.empty() ? 0.0 : t[t.size() / 2];
}

TEST(OpenclPerf, PrintsPerOpMicroseconds) {
  TANDEM_CL_OPS_OR_SKIP(shared);
  RuntimeOptions ro;
  ro.profiling = true;
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  auto ops_or = Ops::create(*rt);
  ASSERT_TRUE(ops_or.ok()) << ops_or.status().message();
  Ops& ops = **ops_or;
  Runtime& r = **rt;
  const int64_t rows = 1024, cols = 1024, m = 32;
  GuardedBuffer x(r, size_t(m * cols)), y(r, size_t(m * rows));
  for (size_t i = 0; i < x.size(); ++i) x.data()[i] = float(i % 7) * 0.1f;
  std::printf("[opencl] per-op device time (median of 3), %s\n", r.caps().name.c_str());
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0}) {
    const size_t rb = row_bytes(t, size_t(cols));
    std::vector<uint8_t> w(rb * size_t(rows), 0);
    GuardedBuffer wb(r, w.data(), w.size());
    const WeightRef wr{t, wb.ref(), rows, cols, rb};
    const double gemv = median_us(r, 3, [&](Event* e) { return ops.gemv(wr, x.ref(), 1, cols, y.ref(), rows, e); });
    const double tiled = median_us(r, 3, [&](Event* e) {
      return ops.gemm(wr, x.ref(), m, cols, y.ref(), rows, e, GemmForm::kLocalTiled);
    });
    const double blocked = median_us(r, 3, [&](Event* e) {
      return ops.gemm(wr, x.ref(), m, cols, y.ref(), rows, e, GemmForm::kRegisterBlocked);
    });
    const double flop = 2.0 * double(m * rows * cols);
    std::printf("[opencl]   %-5s gemv 1x%lldx%lld %8.1f us (%5.2f GB/s) | gemm %lldx%lldx%lld local-tiled %8.1f us "
                "(%5.2f GFLOP/s), register-blocked %8.1f us (%5.2f GFLOP/s)\n",
                std::string(dtype_name(t)).c_str(), (long long)rows, (long long)cols, gemv,
                double(w.size()) / (gemv * 1e3), (long long)m, (long long)rows, (long long)cols, tiled,
                flop / (tiled * 1e3), blocked, flop / (blocked * 1e3));
  }
  GuardedBuffer nw(r, size_t(cols));
  std::printf("[opencl]   rmsnorm 32x1024 %9.1f us\n",
              median_us(r, 3, [&](Event* e) { return ops.rmsnorm(x.ref(), nw.ref(), y.ref(), m, cols, 1e-5f, e); }));
  std::printf("[opencl]   swiglu 32x1024  %9.1f us\n",
              median_us(r, 3, [&](Event* e) { return ops.swiglu_inplace(y.ref(), x.ref(), m * cols, e); }));
  const int T = 512, hd = 64, heads = 16, kvh = 4, kv_dim = kvh * hd;
  GuardedBuffer kc(r, size_t(T * kv_dim)), vc(r, size_t(kv_dim * T)), q(r, size_t(m * heads * hd)),
      o(r, size_t(m * heads * hd));
  std::printf("[opencl]   attention decode (past 511, 16/4 heads, hd 64) %9.1f us\n",
              median_us(r, 3, [&](Event* e) {
                return ops.attention(q.ref(), heads * hd, kc.ref(), vc.ref(), o.ref(), heads * hd, 1, heads, kvh, hd,
                                     T, 511, e);
              }));
  std::printf("[opencl]   attention prefill (32 rows, past 0)             %9.1f us\n",
              median_us(r, 3, [&](Event* e) {
                return ops.attention(q.ref(), heads * hd, kc.ref(), vc.ref(), o.ref(), heads * hd, m, heads, kvh, hd,
                                     T, 0, e);
              }));
  // The same over a typed cache (token-major; the default --cache-type is f16), and its store.
  for (auto [kt, vt] : {std::pair{DType::F32, DType::F32}, std::pair{DType::F16, DType::F16},
                        std::pair{DType::Q8_0, DType::Q8_0}}) {
    const KvGeometry g{uint32_t(T), uint32_t(kvh), uint32_t(hd), 16, KvLayout::kTokenMajor, kt, vt};
    GuardedBuffer kp(r, size_t(g.bytes() / 4)), vp(r, size_t(g.values().bytes() / 4));
    const std::string types = std::string(dtype_name(kt)) + "/" + std::string(dtype_name(vt));
    std::printf("[opencl]   attention_pages %-9s decode %9.1f us, prefill %9.1f us, kv_store 32 rows %7.1f us\n",
                types.c_str(), median_us(r, 3, [&](Event* e) {
                  return ops.attention_pages(q.ref(), heads * hd, g, kp.ref(), vp.ref(), o.ref(), heads * hd, 1, heads,
                                             511, e);
                }),
                median_us(r, 3, [&](Event* e) {
                  return ops.attention_pages(q.ref(), heads * hd, g, kp.ref(), vp.ref(), o.ref(), heads * hd, m, heads,
                                             0, e);
                }),
                median_us(r, 3, [&](Event* e) {
                  return ops.kv_store_pages(q.ref(), kv_dim, q.ref(), kv_dim, m, g, kp.ref(), vp.ref(), 0, e);
                }));
  }
  EXPECT_EQ(r.bytes_copied(), 0u);
}

}  // namespace
}  // namespace tandem::opencl
