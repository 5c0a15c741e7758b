// The npu device runs a compile cache's programs in place of the operator library's, and refuses
// one whose bytes changed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "compile_cache/cache.h"
#include "devices/npu/npu_device.h"
#include "devices/registry.h"
#include "devices/cpu/ops.h"
#include "npu/oplib/elementwise.h"
#include "npu/oplib/kv_cache.h"
#include "npu/executor.h"
#include "npu/oplib/matmul.h"
#include "npu/oplib/norm_linear.h"
#include "devices/cpu/matmul/matmul.h"
#include "runtime/graph_forward.h"
#include "runtime/hetero_forward.h"
#include "runtime/sampler.h"
#include "sim/soc_model.h"
#include "sim/task_cost.h"
#include "tests/model/test_models.h"

namespace tandem::devices {
namespace {

struct CacheFixture {
  std::shared_ptr<Model> model;
  const Weight* w = nullptr;
  std::string dir;
};

// A cache holding a single-buffered, weight-stationary program for the gate weight at `rows` rows:
// a schedule the library would not pick, so its use is visible in the device's counters.
CacheFixture make_cache(const std::string& name, int64_t rows) {
  CacheFixture s;
  s.model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  s.w = &s.model->layers()[0].w_gate;  // 128 x 64
  s.dir = testing::process_temp_dir() + "/" + name;
  std::filesystem::remove_all(s.dir);
  const npu::TargetModel t = npu::TargetModel::load_default().value();
  npu::oplib::MatmulSpec spec{uint32_t(rows), uint32_t(s.w->cols), uint32_t(s.w->rows), DType::Q4_0,
                              npu::oplib::MatmulOrder::kWeightStationary, false, false};
  auto plan = npu::oplib::block_matmul(spec, t, 32, 2, 1);
  EXPECT_TRUE(plan.ok());
  auto prog = npu::oplib::emit_matmul(spec, *plan, t);
  EXPECT_TRUE(prog.ok());
  compile_cache::CacheWriter cw(s.dir);
  cw.manifest().key = {"m", compile_cache::target_hash(t), compile_cache::driver_version(), "q4_0"};
  compile_cache::ProgramEntry e;
  e.rows = spec.n;
  e.in = spec.in;
  e.out = spec.out;
  e.format = e.source_quant = "q4_0";
  e.order = "weight_stationary";
  e.double_buffer = e.double_buffer_out = false;
  EXPECT_TRUE(cw.add_program(*prog, e).ok());
  EXPECT_TRUE(cw.finish().ok());
  return s;
}

// The prompt's greedy continuation of n_gen tokens.
std::vector<TokenId> greedy_tokens(DecoderForward& f, const std::vector<TokenId>& prompt, int n_gen, int n_vocab) {
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  std::vector<TokenId> out;
  EXPECT_TRUE(f.eval(prompt, 0, logits.data()).ok());
  for (int i = 0; i < n_gen; ++i) {
    out.push_back(argmax(logits));
    EXPECT_TRUE(f.eval(std::span(&out.back(), 1), int(prompt.size()) + i, logits.data()).ok());
  }
  return out;
}

std::shared_ptr<const compile_cache::CompileCache> open_cache(const std::string& dir) {
  auto c = compile_cache::CompileCache::open_any(dir);
  EXPECT_TRUE(c.ok());
  return std::make_shared<const compile_cache::CompileCache>(std::move(*c));
}

TEST(NpuDeviceCache, CompiledProgramMatchesTheLibrary) {
  const int64_t m = 5;
  CacheFixture s = make_cache("dev1", m);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(m * s.w->cols));
  for (float& v : x) v = nd(rng);
  std::vector<float> lib(size_t(m * s.w->rows)), compiled(lib.size());
  for (bool with_cache : {false, true}) {
    auto dev = open_device("npu", s.model, 1);
    ASSERT_TRUE(dev.ok());
    auto* npu = dynamic_cast<NpuDevice*>(dev->get());
    ASSERT_NE(npu, nullptr);
    if (with_cache) npu->set_compile_cache(open_cache(s.dir));
    std::vector<float>& y = with_cache ? compiled : lib;
    OpCall call = OpCall::matmul(s.w, 0, s.w->rows, x.data(), m, s.w->cols, y.data(), s.w->rows);
    ASSERT_TRUE(npu->prepare(GraphSpec::of(call)).ok());
    EXPECT_EQ(npu->graphs_from_cache(), with_cache ? 1u : 0u);
    auto done = npu->submit(call);
    ASSERT_TRUE(done.ok());
    ASSERT_TRUE((*done)->wait().ok());
    // Another shape is not in the cache: the library's graph serves it.
    OpCall other = OpCall::matmul(s.w, 0, s.w->rows, x.data(), 1, s.w->cols, y.data(), s.w->rows);
    ASSERT_TRUE(npu->prepare(GraphSpec::of(other)).ok());
    EXPECT_EQ(npu->graphs_from_cache(), with_cache ? 1u : 0u);
  }
  // Both accumulate each output over the in-tiles in the same order: identical fp16 results.
  for (size_t i = 0; i < lib.size(); ++i) ASSERT_EQ(lib[i], compiled[i]) << i;
}

// An rmsnorm program the compiler placed in a TCM region of its own (not where the library puts
// it) serves the device's rmsnorm graph of that shape; the result is the library's, bit for bit.
TEST(NpuDeviceCache, CompiledRowProgramServesTheGraph) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  const Weight* gain = &model->layers()[0].attn_norm;
  const int64_t m = 6, d = gain->cols * gain->rows;
  const float eps = model->config().rms_eps;
  const npu::TargetModel t = npu::TargetModel::load_default().value();
  const std::string dir = testing::process_temp_dir() + "/dev_rows";
  std::filesystem::remove_all(dir);
  {
    auto prog = npu::oplib::lower_elementwise(npu::oplib::EltOp::kRmsNorm, uint32_t(m), uint32_t(d), t, eps,
                                              {8192, npu::oplib::elementwise_tcm_bytes(npu::oplib::EltOp::kRmsNorm, 2, uint32_t(d), t)});
    ASSERT_TRUE(prog.ok()) << prog.status().message();
    compile_cache::CacheWriter cw(dir);
    cw.manifest().key = {"m", compile_cache::target_hash(t), compile_cache::driver_version(), "q4_0"};
    compile_cache::ProgramEntry e;
    e.kind = "elementwise";
    e.rows = uint32_t(m);
    e.elementwise = {"rmsnorm", uint32_t(d), double(eps)};
    ASSERT_TRUE(cw.add_program(*prog, e).ok());
    ASSERT_TRUE(cw.finish().ok());
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> x(size_t(m * d));
  for (float& v : x) v = nd(rng);
  std::vector<float> lib(x.size()), compiled(x.size());
  for (bool with_cache : {false, true}) {
    auto dev = open_device("npu", model, 1);
    ASSERT_TRUE(dev.ok());
    auto* npu = dynamic_cast<NpuDevice*>(dev->get());
    if (with_cache) npu->set_compile_cache(open_cache(dir));
    OpCall call;
    call.kind = OpKind::kRmsNorm;
    call.weight = gain;
    call.eps = eps;
    call.a = {x.data(), m, d, d};
    call.out = {(with_cache ? compiled : lib).data(), m, d, d};
    ASSERT_TRUE(npu->prepare(GraphSpec::of(call)).ok());
    EXPECT_EQ(npu->graphs_from_cache(), with_cache ? 1u : 0u);
    auto done = npu->submit(call);
    ASSERT_TRUE(done.ok());
    ASSERT_TRUE((*done)->wait().ok());
  }
  for (size_t i = 0; i < lib.size(); ++i) ASSERT_EQ(lib[i], compiled[i]) << i;
}

TEST(NpuDeviceCache, ModifiedProgramFailsPrepare) {
  CacheFixture s = make_cache("dev2", 3);
  auto cache = open_cache(s.dir);
  const auto& e = cache->manifest().programs.at(0);
  {
    std::fstream f(s.dir + "/" + e.file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(e.bytes / 2));
    f.put('\x7f');
  }
  auto dev = open_device("npu", s.model, 1);
  ASSERT_TRUE(dev.ok());
  auto* npu = dynamic_cast<NpuDevice*>(dev->get());
  npu->set_compile_cache(cache);
  std::vector<float> x(size_t(3 * s.w->cols), 0.5f), y(size_t(3 * s.w->rows));
  OpCall call = OpCall::matmul(s.w, 0, s.w->rows, x.data(), 3, s.w->cols, y.data(), s.w->rows);
  auto r = npu->prepare(GraphSpec::of(call));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("refusing to run a modified program"), std::string::npos) << r.status().message();
  EXPECT_FALSE(npu->supports(call));
}

// The simulator, given the cache, times the compiler's program for a shape it holds (here a
// schedule the library would not pick) and the library's for the rest, and counts which was which.
TEST(NpuDeviceCache, SimulatorTimesTheCompiledProgram) {
  const int64_t m = 5;
  CacheFixture s = make_cache("sim", m);
  auto soc = sim::SocModel::load_named("sd8gen3");
  ASSERT_TRUE(soc.ok()) << soc.status().message();
  const sim::ComputeUnit* npu = nullptr;
  for (const sim::ComputeUnit& u : soc->units)
    if (u.static_graphs()) npu = &u;
  ASSERT_NE(npu, nullptr);
  std::vector<float> x(size_t(m * s.w->cols)), y(size_t(m * s.w->rows));
  Task t;
  t.device = npu->name;
  t.call = OpCall::matmul(s.w, 0, s.w->rows, x.data(), m, s.w->cols, y.data(), s.w->rows);
  Task other = t;  // a shape the cache lacks: 7 rows
  std::vector<float> x7(size_t(7 * s.w->cols)), y7(size_t(7 * s.w->rows));
  other.call = OpCall::matmul(s.w, 0, s.w->rows, x7.data(), 7, s.w->cols, y7.data(), s.w->rows);

  sim::TaskCostModel library(*soc), compiled(*soc);
  compiled.set_compile_cache(open_cache(s.dir));
  auto lib = library.cost(t, npu), comp = compiled.cost(t, npu);
  ASSERT_TRUE(lib.ok() && comp.ok());
  // What the cached program takes on the unit's target, scaled as every NPU matmul is.
  auto cache = open_cache(s.dir);
  auto program = cache->load(cache->manifest().programs.at(0));
  ASSERT_TRUE(program.ok());
  npu::Executor exec(npu->npu.target);
  npu::ExecOptions timing_only;
  timing_only.functional = false;
  auto run = exec.run(*program, timing_only);
  ASSERT_TRUE(run.ok());
  EXPECT_DOUBLE_EQ(comp->seconds, run->seconds * npu->npu.calibration.factor(s.w->rows, s.w->cols));
  EXPECT_NE(comp->seconds, lib->seconds);
  EXPECT_EQ(compiled.npu_shapes_compiled(), 1u);
  EXPECT_EQ(compiled.npu_shapes_library(), 0u);

  auto lib7 = library.cost(other, npu), comp7 = compiled.cost(other, npu);
  ASSERT_TRUE(lib7.ok() && comp7.ok());
  EXPECT_DOUBLE_EQ(comp7->seconds, lib7->seconds);
  EXPECT_EQ(compiled.npu_shapes_library(), 1u);
  EXPECT_NE(compiled.first_not_compiled().find("m7"), std::string::npos) << compiled.first_not_compiled();
}

// A norm and the projections reading it as one compiled program (EdgeLLM-MLIR's fusion cluster):
// with a cache of norm_linear programs the runtime launches each cluster once on the NPU, in
// static pieces, and the tokens are the cpu's. The programs here come from the operator library's
// emitter at a blocking the test picks (what tandem compile --fuse-clusters writes).
TEST(NpuDeviceCache, FusedNormProjectionsRunAsOneProgram) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  const LayerWeights& L = model->layers()[0];
  const npu::TargetModel t = npu::TargetModel::load_default().value();
  const std::string dir = testing::process_temp_dir() + "/fused";
  std::filesystem::remove_all(dir);
  compile_cache::CacheWriter cw(dir);
  cw.manifest().key = {"m", compile_cache::target_hash(t), compile_cache::driver_version(), "q4_0"};
  for (uint32_t rows : {1u, 4u, 8u}) {
    for (const std::vector<const Weight*>& cluster : {std::vector<const Weight*>{&L.wq, &L.wk, &L.wv},
                                                       std::vector<const Weight*>{&L.w_gate, &L.w_up}}) {
      npu::oplib::NormLinearSpec spec;
      spec.base = {rows, uint32_t(L.wq.cols), 0, DType::Q4_0, npu::oplib::MatmulOrder::kActivationStationary, false, false};
      for (const Weight* w : cluster) spec.outs.push_back(uint32_t(w->rows));
      spec.eps = model->config().rms_eps;
      auto plan = npu::oplib::block_norm_linear(spec, t, 32, 2, 1);
      ASSERT_TRUE(plan.ok()) << plan.status().message();
      auto prog = npu::oplib::emit_norm_linear(spec, *plan, t);
      ASSERT_TRUE(prog.ok()) << prog.status().message();
      compile_cache::ProgramEntry e;
      e.kind = "norm_linear";
      e.rows = rows;
      e.in = spec.base.in;
      e.format = e.source_quant = "q4_0";
      e.order = "activation_stationary";
      e.double_buffer = e.double_buffer_out = false;
      e.norm_linear = {spec.outs, double(spec.eps)};
      ASSERT_TRUE(cw.add_program(*prog, e).ok());
    }
  }
  ASSERT_TRUE(cw.finish().ok());

  const int n_vocab = model->config().n_vocab, n_gen = 4;
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // pieces of 8 and 3 padded to 4
  auto greedy = [&](DecoderForward& f) { return greedy_tokens(f, prompt, n_gen, n_vocab); };
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const std::vector<TokenId> want = greedy(**cpu_only);
  for (bool fuse : {true, false}) {
    HeteroOptions o;
    o.devices = {"cpu", "npu"};
    o.partition.strategy = Strategy::kNpuOnly;
    o.partition.standard_lengths = {4, 8};
    o.partition.npu_row_ops = fuse;  // the compiler's placement; off: the fused programs are not launched
    o.context = 64;
    o.max_batch = 16;
    o.npu_cache = open_cache(dir);
    auto h = HeteroForward::create(model, o);
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(greedy(**h), want) << (fuse ? "fused" : "unfused");
    const ExecutionReport r = (*h)->execution_report();
    // Two clusters per layer in each of the 1 + n_gen chunks.
    EXPECT_EQ(r.npu_fused, fuse ? uint64_t(2 * model->config().n_layers * (1 + n_gen)) : 0u);
    // Each layer's two clusters at 1, 4 and 8 rows (a graph binds its layer's weights), from the cache.
    EXPECT_EQ(r.npu_graphs_compiled, fuse ? uint64_t(2 * model->config().n_layers * 3) : 0u);
  }
}

// A cache holding KV appends of `rows` tokens for a KV of g's shape and layout.
void write_kv_cache(const std::string& dir, const KvGeometry& g, const std::vector<uint32_t>& rows) {
  const npu::TargetModel t = npu::TargetModel::load_default().value();
  std::filesystem::remove_all(dir);
  compile_cache::CacheWriter cw(dir);
  cw.manifest().key = {"m", compile_cache::target_hash(t), compile_cache::driver_version(), "q4_0"};
  for (uint32_t r : rows) {
    compile_cache::ProgramEntry e;
    e.kind = "kv_append";
    e.rows = r;
    e.kv = {g.capacity, g.heads, g.head_dim, g.page_tokens, std::string(kv_layout_name(g.layout)), r == 1 ? "decode" : "prefill"};
    ASSERT_TRUE(cw.add_program(npu::oplib::kv_append_program(g, r), e).ok());
  }
  ASSERT_TRUE(cw.finish().ok());
}

TEST(NpuDeviceCache, KvAppendWritesThePagesTheCpuWould) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor}) {
    const KvGeometry g{32, 2, 16, 8, layout};
    const std::string dir = testing::process_temp_dir() + "/kv_" + std::string(kv_layout_name(layout));
    write_kv_cache(dir, g, {4});
    const int64_t n = 4, kv = g.width();
    const int n_past = 5;
    std::vector<float> k(size_t(n * kv)), v(size_t(n * kv));
    for (float& x : k) x = nd(rng);
    for (float& x : v) x = nd(rng);
    std::vector<uint8_t> want_k(g.bytes(), 0x77), want_v = want_k, k_pages = want_k, v_pages = want_k;
    cpu::kv_store_pages(k.data(), kv, v.data(), kv, n, g, want_k.data(), want_v.data(), n_past);

    auto dev = open_device("npu", model, 1);
    ASSERT_TRUE(dev.ok());
    auto* npu = dynamic_cast<NpuDevice*>(dev->get());
    OpCall call;
    call.kind = OpKind::kKvStore;
    call.a = call.out = {k.data(), n, kv, kv};
    call.b = {v.data(), n, kv, kv};
    call.n_past = n_past;
    call.context = int(g.capacity);
    call.kv_pages = g;
    call.k_pages = k_pages.data();
    call.v_pages = v_pages.data();
    EXPECT_FALSE(npu->prepare(GraphSpec::of(call)).ok()) << "without a cache the npu has no KV append";
    npu->set_compile_cache(open_cache(dir));
    ASSERT_TRUE(npu->prepare(GraphSpec::of(call)).ok());
    EXPECT_EQ(npu->graphs_from_cache(), 1u);
    auto done = npu->submit(call);
    ASSERT_TRUE(done.ok());
    ASSERT_TRUE((*done)->wait().ok());
    EXPECT_EQ(k_pages, want_k) << kv_layout_name(layout);  // the appended tokens, and nothing else touched
    EXPECT_EQ(v_pages, want_v) << kv_layout_name(layout);
    // The compiled appends write fp16: a q8_0 cache of the same shape is the cpu's to write.
    OpCall q8 = call;
    q8.kv_pages.v_type = DType::Q8_0;
    const Result<PrepareReport> refused = npu->prepare(GraphSpec::of(q8));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("q8_0 values"), std::string::npos) << refused.status().message();
  }
}

TEST(NpuDeviceCache, NpuOwnedKvGivesTheCpuTokens) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  const ModelConfig& c = model->config();
  const KvGeometry g{64, uint32_t(c.n_kv_heads), uint32_t(c.head_dim), 16, KvLayout::kHeadMajor};
  const std::string dir = testing::process_temp_dir() + "/kv_owned";
  write_kv_cache(dir, g, {1, 4, 8});
  const int n_gen = 4;
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // appends of 8 and 3 padded to 4
  auto greedy = [&](DecoderForward& f) { return greedy_tokens(f, prompt, n_gen, c.n_vocab); };
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const std::vector<TokenId> want = greedy(**cpu_only);
  // Without faults, and with every third npu kernel failing after it ran (the cpu appends again
  // into the same pages, which the fault scribbled on).
  for (const std::string& fault : {std::string(), std::string("run:3")}) {
    HeteroOptions o;
    o.devices = {"npu"};  // alone: the cpu joins as host, runs attention, and reads the npu's pages
    o.partition.strategy = Strategy::kNpuOnly;
    o.partition.standard_lengths = {4, 8};
    o.context = 64;
    o.max_batch = 16;
    o.npu_cache = open_cache(dir);
    o.npu_fault = fault;
    auto h = HeteroForward::create(model, o);
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(greedy(**h), want) << fault;
    const ExecutionReport r = (*h)->execution_report();
    EXPECT_NE(r.kv.find("npu-owned fp16 pages, head_major"), std::string::npos) << r.kv;
    EXPECT_EQ(r.npu_kv_appends, uint64_t(c.n_layers * (1 + n_gen)));  // every layer's append, every chunk
    EXPECT_EQ(r.npu_graphs_compiled, 3u);                              // the appends of 1, 4 and 8 rows
    if (!fault.empty()) {
      EXPECT_GT(r.npu_run_fallbacks, 0u);
    }
  }
}

}  // namespace
}  // namespace tandem::devices
