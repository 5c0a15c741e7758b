// The OpenCL kernels over a typed KV cache (core/kv_layout.h: f32 / f16 / q8_0 keys and values,
// token- or head-major) against the cpu device's (cpu::kv_store_pages, cpu::attention_pages) on
// the same inputs: the stored cache bytes must be identical (fp16 round to nearest even, q8_0 as
// ggml's reference quantizer), and attention outputs within kAttentionTolerance of the cpu's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/kv_layout.h"
#include "core/thread_pool.h"
#include "devices/cpu/attention.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/ops.h"
#include "devices/opencl/opencl_device.h"
#include "tests/model/test_models.h"
#include "tests/opencl/cl_test_util.h"

namespace tandem::opencl {
namespace {

using testing::GuardedBuffer;

// Both sides compute in fp32 from the same cached bytes; they differ in summation order, in the
// softmax's form (the cpu's exact two-pass vs the kernel's one-pass online rescaling) and in exp /
// tanh ulps: about 1e-6 of the output's magnitude in practice. The bound is
// max |got - want| <= 1e-4 x max(1, max |want|) over the call's outputs; a wrong stride, type,
// scale or mask is off by 1e-2 or more.
constexpr double kAttentionTolerance = 1e-4;

// The cpu's arithmetic in fp32 for the comparison (its defaults round activations to bf16 or int8
// for q8_0 "weights"); restored on exit.
class Fp32Cpu {
 public:
  Fp32Cpu() : gemm_(cpu::gemm_precision()), decode_(cpu::decode_precision()) {
    cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
    cpu::set_decode_precision(cpu::DecodePrecision::kFp32);
  }
  ~Fp32Cpu() {
    cpu::set_gemm_precision(gemm_);
    cpu::set_decode_precision(decode_);
  }

 private:
  cpu::GemmPrecision gemm_;
  cpu::DecodePrecision decode_;
};

std::vector<float> normal_floats(size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// The first byte where a and b differ, as "byte i (token t, head h)" of cache g, or "".
std::string first_difference(const KvGeometry& g, const uint8_t* a, const uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    for (uint32_t t = 0; t < g.capacity; ++t)
      for (uint32_t h = 0; h < g.heads; ++h) {
        const uint64_t o = kv_offset(g, t, h);
        if (i >= o && i < o + g.head_bytes()) {
          char buf[128];
          std::snprintf(buf, sizeof buf, "byte %zu (token %u, head %u, byte %llu of the row): opencl 0x%02x, cpu 0x%02x", i,
                        t, h, static_cast<unsigned long long>(i - o), a[i], b[i]);
          return buf;
        }
      }
    return "byte " + std::to_string(i) + " (outside every row)";
  }
  return "";
}

// max |a - b| and max |b| over n floats.
std::pair<double, double> max_diff(const float* a, const float* b, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    m = std::max(m, std::fabs(double(b[i])));
  }
  return {d, m};
}

struct Shape {
  int kv_heads, n_heads, head_dim, capacity;
  int prompt;  // rows of the first store (at 0)
  int window;  // the window of the windowed steps
};

struct Step {
  int n;
  cpu::AttentionScores how;
};

// One cache: a prompt at 0, then decode and small prefill steps at n_past > 0, each stored by both
// devices (cache bytes compared whole, so a stray write anywhere shows) and attended.
void run_cache(Ops& ops, const Shape& s, DType kt, DType vt, KvLayout layout, unsigned seed) {
  Runtime& rt = ops.runtime();
  const KvGeometry g{uint32_t(s.capacity), uint32_t(s.kv_heads), uint32_t(s.head_dim), 16, layout, kt, vt};
  const KvGeometry gv = g.values();
  const int kv = int(g.width()), qd = s.n_heads * s.head_dim;
  const std::string what = std::string(kv_layout_name(layout)) + " " + std::string(dtype_name(kt)) + "/" +
                           std::string(dtype_name(vt)) + " heads " + std::to_string(s.n_heads) + "/" +
                           std::to_string(s.kv_heads) + " hd " + std::to_string(s.head_dim);
  // Unwritten cache bytes hold a pattern (identical on both sides): a write to the wrong place shows.
  std::vector<uint8_t> k_cpu(g.bytes(), 0x5a), v_cpu(gv.bytes(), 0x3c);
  GuardedBuffer k_cl(rt, k_cpu.data(), k_cpu.size()), v_cl(rt, v_cpu.data(), v_cpu.size());
  auto* k_cl_bytes = reinterpret_cast<const uint8_t*>(k_cl.data());
  auto* v_cl_bytes = reinterpret_cast<const uint8_t*>(v_cl.data());
  std::mt19937 rng(seed);
  const std::vector<Step> steps = {
      {s.prompt, {}},                    // the prompt (n_past 0)
      {1, {}},                           // decode
      {5, {0, 0, s.window}},             // a small prefill, windowed
      {1, {0, 0, s.window}},             // decode, windowed
      {5, {0.2f, 30.0f, 0}},             // prefill with softcap and an explicit scale
      {1, {0.2f, 30.0f, s.window}},      // decode with all three
  };
  int n_past = 0;
  for (const Step& st : steps) {
    const int n = st.n;
    ASSERT_LE(n_past + n, s.capacity);
    char tag_buf[160];
    std::snprintf(tag_buf, sizeof tag_buf, "%s n %d n_past %d window %d softcap %g", what.c_str(), n, n_past,
                  st.how.window, double(st.how.softcap));
    const std::string tag(tag_buf);
    // Rows of k and v with a stride wider than the KV width (the store takes strided rows).
    const int ld = kv + 8;
    const std::vector<float> k = normal_floats(size_t(n * ld), rng), v = normal_floats(size_t(n * ld), rng);
    const std::vector<float> q = normal_floats(size_t(n * qd), rng, 0.5f);

    cpu::kv_store_pages(k.data(), ld, v.data(), ld, n, g, k_cpu.data(), v_cpu.data(), n_past);
    GuardedBuffer k_rows(rt, k.data(), k.size() * 4), v_rows(rt, v.data(), v.size() * 4);
    Status status = ops.kv_store_pages(k_rows.ref(), ld, v_rows.ref(), ld, n, g, k_cl.ref(), v_cl.ref(), n_past);
    ASSERT_TRUE(status.ok()) << tag << ": " << status.message();
    ASSERT_TRUE(rt.finish().ok());
    EXPECT_EQ(first_difference(g, k_cl_bytes, k_cpu.data(), k_cpu.size()), "") << tag << ": keys";
    EXPECT_EQ(first_difference(gv, v_cl_bytes, v_cpu.data(), v_cpu.size()), "") << tag << ": values";
    EXPECT_TRUE(k_cl.guards_intact() && v_cl.guards_intact()) << tag << ": a store wrote outside the cache";

    std::vector<float> want(size_t(n * qd));
    cpu::attention_pages(testing::cpu_pool(), q.data(), qd, g, k_cpu.data(), v_cpu.data(), want.data(), qd, n, s.n_heads,
                         n_past, st.how);
    GuardedBuffer q_cl(rt, q.data(), q.size() * 4), out(rt, want.size());
    status = ops.attention_pages(q_cl.ref(), qd, g, k_cl.ref(), v_cl.ref(), out.ref(), qd, n, s.n_heads, n_past,
                                 nullptr, {st.how.scale, st.how.softcap, st.how.window});
    ASSERT_TRUE(status.ok()) << tag << ": " << status.message();
    ASSERT_TRUE(rt.finish().ok());
    EXPECT_TRUE(testing::all_finite(out.data(), want.size())) << tag;
    EXPECT_TRUE(out.guards_intact()) << tag << ": attention wrote outside its output";
    const auto [diff, mag] = max_diff(out.data(), want.data(), want.size());
    EXPECT_LE(diff, kAttentionTolerance * std::max(1.0, mag)) << tag << ": max |opencl - cpu| " << diff << ", max |cpu| " << mag;
    std::printf("[opencl] kv pages %-70s max diff %.3g (max |out| %.3g)\n", tag.c_str(), diff, mag);
    n_past += n;
  }
}

struct Types {
  DType k, v;
};

TEST(OpenclKvPages, StoreAndAttentionMatchCpuForEveryTypeAndLayout) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  const Fp32Cpu fp32;
  const Shape shapes[] = {
      {2, 6, 64, 40, 7, 6},      // GQA group 3, one chunk of keys
      {1, 4, 128, 160, 100, 70}, // keys past two chunks of 64; a window across chunk boundaries
  };
  const Types types[] = {{DType::F16, DType::F16}, {DType::Q8_0, DType::Q8_0}, {DType::F16, DType::Q8_0},
                         {DType::F32, DType::F32}, {DType::Q8_0, DType::F16},  {DType::F32, DType::Q8_0}};
  unsigned seed = 1;
  for (const Shape& s : shapes)
    for (const Types& t : types)
      for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor}) run_cache(*ops, s, t.k, t.v, layout, seed++);
}

TEST(OpenclKvPages, HeadsThatAreNotMultiplesOfSixteenOrFull) {
  // f32 / f16 heads of any width (the dot product's scalar tail), and the widest head (256).
  TANDEM_CL_OPS_OR_SKIP(ops);
  const Fp32Cpu fp32;
  unsigned seed = 100;
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor}) {
    run_cache(*ops, Shape{2, 4, 40, 30, 9, 4}, DType::F16, DType::F32, layout, seed++);
    run_cache(*ops, Shape{3, 3, 24, 30, 9, 4}, DType::F32, DType::F16, layout, seed++);
    run_cache(*ops, Shape{1, 2, 256, 90, 70, 50}, DType::Q8_0, DType::F16, layout, seed++);
  }
}

// Inputs where rounding decides: q8_0 elements a hair either side of k + 0.5 steps of their block
// (a quotient off by an ulp flips them), tiny and huge blocks, zero blocks; f16 values exactly
// halfway between two halves (ties go to even), subnormal halves, overflow, infinities, NaN, -0.
TEST(OpenclKvPages, StoreRoundsAsTheCpuOnHalfwayValues) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  const KvGeometry g{512, 4, 64, 16, KvLayout::kTokenMajor, DType::Q8_0, DType::F16};
  const KvGeometry gv = g.values();
  const int n = int(g.capacity), kv = int(g.width());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  std::uniform_int_distribution<int> level(-127, 126), exponent(-100, 100), nudge(-2, 2), coin(0, 1);
  std::vector<float> k(size_t(n * kv)), v(size_t(n * kv));
  for (size_t b = 0; b < k.size() / 32; ++b) {
    float* x = k.data() + b * 32;
    const int kind = int(b % 16);
    if (kind == 0) {  // all zero: d = 0, id = 0
      std::fill(x, x + 32, 0.0f);
      continue;
    }
    // amax from 2^-100 (d stays a normal float) to 2^100 (d overflows fp16)
    const float amax = std::ldexp(unit(rng), kind == 1 ? -100 : kind == 2 ? 100 : exponent(rng) / 4);
    const float step = amax / 127.0f;
    for (int j = 0; j < 32; ++j) {
      float e = (float(level(rng)) + 0.5f) * step;
      for (int u = nudge(rng); u != 0; u += u > 0 ? -1 : 1) e = std::nextafter(e, u > 0 ? INFINITY : -INFINITY);
      x[j] = e;
    }
    x[rng() % 32] = coin(rng) ? amax : -amax;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const int kind = int(i % 64);
    const fp16_t h = fp16_t(rng() & 0x7bff);  // a finite half below the largest
    const float lo = fp16_to_f32(h), hi = fp16_to_f32(fp16_t(h + 1));
    float x = lo + (hi - lo) * 0.5f;  // exact: the midpoint has 12 significant bits
    if (kind == 1) x = 65519.0f;                         // rounds down to 65504
    if (kind == 2) x = 65520.0f;                         // rounds up to infinity
    if (kind == 3) x = INFINITY;
    if (kind == 4) x = std::nanf("");
    if (kind == 5) x = -0.0f;
    if (kind == 6) x = std::ldexp(1.0f, -25);            // half the smallest subnormal: ties to 0
    if (kind == 7) x = std::ldexp(3.0f, -25);            // 1.5 subnormal steps: ties to 2
    if (kind == 8) x = std::ldexp(unit(rng), -26);       // below half the smallest subnormal
    v[i] = coin(rng) ? x : -x;
  }
  std::vector<uint8_t> k_cpu(g.bytes(), 0), v_cpu(gv.bytes(), 0);
  cpu::kv_store_pages(k.data(), kv, v.data(), kv, n, g, k_cpu.data(), v_cpu.data(), 0);
  GuardedBuffer k_rows(rt, k.data(), k.size() * 4), v_rows(rt, v.data(), v.size() * 4);
  GuardedBuffer k_cl(rt, g.bytes() / 4), v_cl(rt, gv.bytes() / 4);
  const Status st = ops->kv_store_pages(k_rows.ref(), kv, v_rows.ref(), kv, n, g, k_cl.ref(), v_cl.ref(), 0);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(rt.finish().ok());
  EXPECT_EQ(first_difference(g, reinterpret_cast<const uint8_t*>(k_cl.data()), k_cpu.data(), k_cpu.size()), "")
      << "q8_0 keys";
  EXPECT_EQ(first_difference(gv, reinterpret_cast<const uint8_t*>(v_cl.data()), v_cpu.data(), v_cpu.size()), "")
      << "f16 values";
}

TEST(OpenclKvPages, ArgumentsAreCheckedWithClearErrors) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  Runtime& rt = ops->runtime();
  const KvGeometry g{16, 2, 64, 16, KvLayout::kTokenMajor, DType::Q8_0, DType::F16};
  GuardedBuffer k(rt, size_t(g.bytes() / 4 + 1)), v(rt, size_t(g.values().bytes() / 4 + 1));
  GuardedBuffer rows(rt, size_t(4 * g.width())), q(rt, 4 * 4 * 64), out(rt, 4 * 4 * 64);
  auto message = [](const Status& s) { return s.ok() ? std::string("ok") : s.message(); };
  // Positions past the cache.
  Status s = ops->kv_store_pages(rows.ref(), g.width(), rows.ref(), g.width(), 4, g, k.ref(), v.ref(), 14);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << message(s);
  EXPECT_NE(message(s).find("kv_store_pages"), std::string::npos) << message(s);
  // A type the kernels do not read.
  KvGeometry bad = g;
  bad.v_type = DType::Q4_0;
  s = ops->kv_store_pages(rows.ref(), g.width(), rows.ref(), g.width(), 1, bad, k.ref(), v.ref(), 0);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << message(s);
  EXPECT_NE(message(s).find("q4_0"), std::string::npos) << message(s);
  EXPECT_FALSE(Ops::supports_kv(bad));
  // q8_0 blocks along a head of 48.
  bad = g;
  bad.head_dim = 48;
  s = ops->attention_pages(q.ref(), 4 * 48, bad, k.ref(), v.ref(), out.ref(), 4 * 48, 1, 4, 0);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(message(s).find("48"), std::string::npos) << message(s);
  // Heads that do not share evenly, a misaligned page, a row stride below the width.
  s = ops->attention_pages(q.ref(), 3 * 64, g, k.ref(), v.ref(), out.ref(), 3 * 64, 1, 3, 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << message(s);
  s = ops->attention_pages(q.ref(), 4 * 64, g, k.ref().at(1), v.ref(), out.ref(), 4 * 64, 1, 4, 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << message(s);
  EXPECT_NE(message(s).find("keys: offset"), std::string::npos) << message(s);
  s = ops->kv_store_pages(rows.ref(), g.width() - 1, rows.ref(), g.width(), 1, g, k.ref(), v.ref(), 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << message(s);
  EXPECT_TRUE(rt.finish().ok());
}

// The device: a typed cache in the mapped shared pool, kv_store and attention submitted as the
// graph sends them (supports() accepts them), results equal to the cpu's.
TEST(OpenclKvPages, DeviceRunsTypedKvCallsInTheSharedPool) {
  auto model = tandem::testing::load_or_die(tandem::testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  const Fp32Cpu fp32;
  const int kv_heads = 2, n_heads = 4, hd = 32, context = 24, kv = kv_heads * hd, qd = n_heads * hd;
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor}) {
    auto dev = devices::OpenclDevice::create(model);
    if (!dev.ok()) TANDEM_OPENCL_MISSING("no OpenCL device: " << dev.status().message());
    const KvGeometry g{uint32_t(context), uint32_t(kv_heads), uint32_t(hd), 16, layout, DType::F16, DType::Q8_0};
    const KvGeometry gv = g.values();
    // One pool block: the caches, then k, v, q and out rows (64-byte aligned pieces).
    auto up = [](size_t b) { return (b + 63) / 64 * 64; };
    const int n_max = 6;
    const size_t k_bytes = up(g.bytes()), v_bytes = up(gv.bytes()), rows_bytes = up(size_t(n_max * qd) * 4);
    const size_t bytes = k_bytes + v_bytes + 4 * rows_bytes;
    auto* block = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
    ASSERT_NE(block, nullptr);
    std::memset(block, 0, bytes);
    uint8_t* k_pages = block;
    uint8_t* v_pages = block + k_bytes;
    auto* k_rows = reinterpret_cast<float*>(v_pages + v_bytes);
    auto* v_rows = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(k_rows) + rows_bytes);
    auto* q = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(v_rows) + rows_bytes);
    auto* out = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(q) + rows_bytes);
    ASSERT_TRUE((*dev)->map_shared_memory(block, bytes).ok());
    std::vector<uint8_t> k_cpu(g.bytes(), 0), v_cpu(gv.bytes(), 0);
    std::mt19937 rng(7);
    int n_past = 0;
    for (int n : {6, 1, 5}) {
      const std::vector<float> k = normal_floats(size_t(n * kv), rng), v = normal_floats(size_t(n * kv), rng);
      const std::vector<float> qs = normal_floats(size_t(n * qd), rng, 0.5f);
      std::memcpy(k_rows, k.data(), k.size() * 4);
      std::memcpy(v_rows, v.data(), v.size() * 4);
      std::memcpy(q, qs.data(), qs.size() * 4);
      graph::OpCall store;
      store.kind = graph::OpKind::kKvStore;
      store.a = {k_rows, n, kv, kv};
      store.b = {v_rows, n, kv, kv};
      store.out = store.a;
      store.n_past = n_past;
      store.context = context;
      store.kv_pages = g;
      store.k_pages = k_pages;
      store.v_pages = v_pages;
      ASSERT_TRUE((*dev)->supports(store)) << store.describe();
      auto c = (*dev)->submit(store);
      ASSERT_TRUE(c.ok()) << c.status().message();
      ASSERT_TRUE((*c)->wait().ok());
      cpu::kv_store_pages(k.data(), kv, v.data(), kv, n, g, k_cpu.data(), v_cpu.data(), n_past);
      EXPECT_EQ(std::memcmp(k_pages, k_cpu.data(), k_cpu.size()), 0) << kv_layout_name(layout) << " keys n " << n;
      EXPECT_EQ(std::memcmp(v_pages, v_cpu.data(), v_cpu.size()), 0) << kv_layout_name(layout) << " values n " << n;

      graph::OpCall att;
      att.kind = graph::OpKind::kAttention;
      att.a = {q, n, qd, qd};
      att.out = {out, n, qd, qd};
      att.n_heads = n_heads;
      att.n_kv_heads = kv_heads;
      att.head_dim = hd;
      att.n_past = n_past;
      att.context = context;
      att.window = n == 5 ? 4 : 0;
      att.kv_pages = g;
      att.k_pages = k_pages;
      att.v_pages = v_pages;
      ASSERT_TRUE((*dev)->supports(att)) << att.describe();
      auto a = (*dev)->submit(att);
      ASSERT_TRUE(a.ok()) << a.status().message();
      ASSERT_TRUE((*a)->wait().ok());
      std::vector<float> want(size_t(n * qd));
      cpu::attention_pages(testing::cpu_pool(), qs.data(), qd, g, k_cpu.data(), v_cpu.data(), want.data(), qd, n, n_heads,
                           n_past, {0, 0, att.window});
      const auto [diff, mag] = max_diff(out, want.data(), want.size());
      EXPECT_LE(diff, kAttentionTolerance * std::max(1.0, mag)) << kv_layout_name(layout) << " n " << n;
      n_past += n;
    }
    if ((*dev)->caps().unified_memory) {
      EXPECT_EQ((*dev)->bytes_copied(), 0u) << "the pool's pages were copied";
    }
    dev->reset();  // release the device's wraps before the memory goes
    std::free(block);
  }
}

}  // namespace
}  // namespace tandem::opencl
