// The SimDriver's invariants on constructed task graphs: one unit runs one task at a time, units
// run concurrently, DRAM bandwidth is shared, cross-unit handoffs cost what the sync protocol
// costs, and everything is deterministic. Its units are the SoC's: a unit the SoC describes runs
// tasks on its own numbers, a device the SoC has no unit for is refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "model/gen_model.h"
#include "sim/sim_driver.h"
#include "sim/simulate.h"

namespace tandem::sim {
namespace {

struct Fixture {
  SocModel soc;
  std::shared_ptr<Model> model;
  const Weight& w(int which) const {  // 0 wq [4096x4096], 1 w_gate [14336x4096], 2 w_down [4096x14336]
    const LayerWeights& l = model->layers()[0];
    return which == 0 ? l.wq : which == 1 ? l.w_gate : l.w_down;
  }
};

Fixture make() {
  auto soc = SocModel::load_named("sd8gen3");
  EXPECT_TRUE(soc.ok()) << soc.status().message();
  auto model = shape_only_preset("llama3-8b", DType::Q4_0);
  EXPECT_TRUE(model.ok());
  return Fixture{*soc, *model};
}

// Buffers are never touched by the simulator: any distinct addresses do.
float* fake(uintptr_t i) { return reinterpret_cast<float*>((uintptr_t(1) << 40) + (i << 28)); }

Task matmul_task(const Weight& w, int64_t m, const std::string& device, uintptr_t slot, std::vector<int> deps = {}) {
  Task t;
  t.device = device;
  t.call = graph::OpCall::matmul(&w, 0, w.rows, fake(slot), m, w.cols, fake(slot + 1), w.rows);
  t.deps = std::move(deps);
  t.label = device + " " + w.name + " m=" + std::to_string(m);
  return t;
}

// The unit a task's device runs on (null: the host).
const ComputeUnit* unit_of(const SocModel& soc, const std::string& device) {
  if (device == "host") return nullptr;
  auto q = soc.unit_for_device(device);
  EXPECT_TRUE(q.ok()) << q.status().message();
  return q.ok() ? &soc.units[*q] : nullptr;
}

double alone(SimDriver& d, const Task& t) {
  auto c = d.costs().cost(t, unit_of(d.soc(), t.device));
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c->seconds;
}

TEST(SimDriver, OneUnitRunsItsTasksOneAfterAnother) {
  Fixture f = make();
  SimDriver d(f.soc, SyncMode::kFast);
  TaskGraph g;
  g.add(matmul_task(f.w(0), 128, "opencl", 0));
  g.add(matmul_task(f.w(1), 128, "opencl", 2));
  ASSERT_TRUE(d.run(g).ok());
  EXPECT_NEAR(d.now(), alone(d, g.tasks()[0]) + alone(d, g.tasks()[1]), 1e-12);
  EXPECT_EQ(d.stats().handoffs, 0u) << "same-unit successors need no sync";
}

TEST(SimDriver, UnitsRunConcurrentlyWhenDramHasRoom) {
  Fixture f = make();
  SimDriver d(f.soc, SyncMode::kFast);
  TaskGraph g;
  g.add(matmul_task(f.w(0), 256, "opencl", 0));  // compute-bound: little DRAM traffic
  g.add(matmul_task(f.w(1), 256, "npu", 2));
  ASSERT_TRUE(d.run(g).ok());
  const double a = alone(d, g.tasks()[0]), b = alone(d, g.tasks()[1]);
  EXPECT_NEAR(d.now(), std::max(a, b), 1e-12);
  EXPECT_LT(d.now(), a + b);
}

TEST(SimDriver, ConcurrentMemoryBoundTasksShareTheAchievableBandwidth) {
  Fixture f = make();
  // A constructed SoC with a narrower DRAM, so that the three tasks below oversubscribe it by far
  // (the shipped SoC's calibrated NPU asks for too little to make the GPU lose much).
  f.soc.dram.achievable_bytes_per_s = 40e9;
  SimDriver d(f.soc, SyncMode::kFast);
  TaskGraph g;
  g.add(matmul_task(f.w(1), 1, "opencl", 0));  // decode GEMVs: memory-bound on both units
  g.add(matmul_task(f.w(1), 1, "npu", 2));
  Task copy;  // and the host copying 12 MiB at the same time
  copy.device = "host";
  copy.host_step = [] {};
  copy.host_bytes = 12u << 20;
  copy.label = "copy";
  g.add(copy);
  double demand = 0, longest = 0;
  for (const Task& t : g.tasks()) {
    auto c = d.costs().cost(t, unit_of(d.soc(), t.device));
    ASSERT_TRUE(c.ok());
    demand += c->dram_bytes / c->seconds;
    longest = std::max(longest, c->seconds);
  }
  ASSERT_GT(demand, f.soc.dram.achievable_bytes_per_s) << "the case must oversubscribe DRAM";
  const double gpu_alone = alone(d, g.tasks()[0]);
  ASSERT_TRUE(d.run(g).ok());
  EXPECT_GT(d.stats().busy_seconds.at("gpu"), gpu_alone * 1.05) << "the GPU lost bandwidth to the NPU and the copy";
  EXPECT_GE(d.now(), longest);
  EXPECT_LE(d.stats().dram_bytes / d.now(), f.soc.dram.achievable_bytes_per_s * (1 + 1e-9));
}

TEST(SimDriver, CrossUnitHandoffCostsWhatTheProtocolCosts) {
  Fixture f = make();
  const SocModel& s = f.soc;
  std::vector<double> handoff;
  for (SyncMode mode : {SyncMode::kBlocking, SyncMode::kFast}) {
    SimDriver d(s, mode);
    TaskGraph g;
    g.add(matmul_task(f.w(0), 1, "opencl", 0));
    g.add(matmul_task(f.w(0), 1, "npu", 2, {0}));
    const double a = alone(d, g.tasks()[0]), b = alone(d, g.tasks()[1]);
    ASSERT_TRUE(d.run(g).ok());  // the first run teaches the fast protocol's predictor
    const double first = d.now();
    ASSERT_TRUE(d.run(g).ok());
    handoff.push_back(d.now() - first - a - b);
    if (mode == SyncMode::kBlocking) {
      EXPECT_NEAR(first - a - b, s.sync.flag_write_s + s.find("gpu")->kernels.finish_s + s.find("npu")->npu.submit_s, 1e-9);
    }
    EXPECT_EQ(d.stats().handoffs, 2u);
  }
  EXPECT_LT(handoff[1], handoff[0]) << "fast sync hands off sooner than a clFinish-like wait";
  EXPECT_GT(handoff[1], 0.0);
}

// The paper's fast-sync baseline: on top of the blocking handoff, the tensor crossing units is
// copied to the host and back, and each GPU kernel is waited on (clFinish) before the next one is
// submitted, so two GPU kernels in a row are apart by finish + submit.
TEST(SimDriver, CopyAndFinishBaselineChargesCopiesAndAWaitPerGpuKernel) {
  Fixture f = make();
  const SocModel& s = f.soc;
  const ComputeUnit& gpu = *s.find("gpu");
  auto timeline = [&](bool baseline) {
    SimDriver d(s, SyncMode::kBlocking);
    d.set_copy_and_finish_baseline(baseline);
    TaskGraph g;
    g.add(matmul_task(f.w(0), 1, "opencl", 0));
    g.add(matmul_task(f.w(0), 1, "opencl", 2, {0}));
    g.add(matmul_task(f.w(0), 1, "npu", 4, {1}));
    EXPECT_TRUE(d.run(g).ok());
    return std::tuple{d.now(), d.stats().baseline_copy_seconds, d.stats().baseline_finish_seconds};
  };
  const auto [plain, no_copy, no_finish] = timeline(false);
  const auto [base, copy, finish] = timeline(true);
  EXPECT_EQ(no_copy, 0.0);
  EXPECT_EQ(no_finish, 0.0);
  const double out_bytes = double(f.w(0).rows) * 2.0;  // one fp16 row of wq's output
  EXPECT_NEAR(copy, 2.0 * out_bytes / s.host.memcpy_bytes_per_s, 1e-15) << "device -> host -> device, once";
  EXPECT_NEAR(finish, 2.0 * (gpu.kernels.finish_s + gpu.kernels.submit_s), 1e-15) << "after each GPU kernel";
  // The second GPU kernel waits for the first's clFinish and its own submit; the NPU's input
  // arrives after the copies. The wait after the last GPU kernel overlaps the handoff.
  EXPECT_NEAR(base - plain, gpu.kernels.finish_s + gpu.kernels.submit_s + copy, 1e-9);
}

// A game's frames on the GPU: a frame that arrives while a kernel runs waits for it (no
// preemption), then goes before the kernel that became ready after it arrived; a frame counts as
// kept when it ends within one period of arriving.
TEST(SimDriver, PeriodicLoadSharesTheUnitAtKernelBoundaries) {
  Fixture f = make();
  auto timeline = [&](bool game, bool chained = true) {
    SimDriver d(f.soc, SyncMode::kFast);
    TaskGraph g;
    g.add(matmul_task(f.w(0), 256, "opencl", 0));
    g.add(matmul_task(f.w(0), 256, "opencl", 2, chained ? std::vector<int>{0} : std::vector<int>{}));
    const double D = alone(d, g.tasks()[0]);
    if (game) d.set_periodic_load({"gpu", 0.8 * D, 0.1 * D, 0.0});
    EXPECT_TRUE(d.run(g).ok());
    return std::tuple{D, d.now(), d.stats().frames, d.stats().frames_kept};
  };
  const auto [D, plain, no_frames, none_kept] = timeline(false);
  EXPECT_EQ(no_frames, 0u);
  EXPECT_NEAR(plain, 2 * D, 1e-12);
  // Frame 0 (t = 0) runs first: [0, 0.1D]; kernel 1 [0.1D, 1.1D]; frame 1 arrived at 0.8D and
  // waited: [1.1D, 1.2D], kept (by 1.6D); kernel 2 [1.2D, 2.2D]; frame 2 (1.6D) waits past the graph.
  const auto [D2, with, frames, kept] = timeline(true);
  EXPECT_NEAR(with, 2.2 * D2, 1e-9 * D2);
  EXPECT_EQ(frames, 3u);
  EXPECT_EQ(kept, 2u);
  // Kernel 2 queued from the start (no dependency) was ready before frame 1 arrived: it goes first,
  // [1.1D, 2.1D], and frames 1 and 2 wait past the graph.
  const auto [D3, unchained, frames3, kept3] = timeline(true, false);
  EXPECT_NEAR(unchained, 2.1 * D3, 1e-9 * D3);
  EXPECT_EQ(frames3, 3u);
  EXPECT_EQ(kept3, 1u);
  SimDriver bad(f.soc, SyncMode::kFast);
  bad.set_periodic_load({"dsp", 1e-3, 1e-4, 0});
  TaskGraph g;
  g.add(matmul_task(f.w(0), 1, "opencl", 0));
  auto st = bad.run(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'dsp'"), std::string::npos) << st.message();
}

TEST(SimDriver, PeriodicLoadAfterSubmittedWaitsForTheModelsQueue) {
  Fixture f = make();
  // gpu_only: two chained GPU kernels, both submitted at the start (the queue runs ahead).
  // Otherwise the first GPU kernel needs an NPU result, so it is not submitted until that ends.
  auto timeline = [&](bool gpu_only) {
    SimDriver d(f.soc, SyncMode::kFast);
    TaskGraph g;
    if (gpu_only) {
      g.add(matmul_task(f.w(0), 256, "opencl", 0));
      g.add(matmul_task(f.w(0), 256, "opencl", 2, {0}));
    } else {
      g.add(matmul_task(f.w(2), 256, "npu", 0));
      g.add(matmul_task(f.w(0), 256, "opencl", 2, {0}));
    }
    const double D = alone(d, g.tasks()[gpu_only ? 0 : 1]);
    PeriodicLoad load{"gpu", 0.8 * D, 0.1 * D, 0.0};
    load.after_submitted = true;
    d.set_periodic_load(load);
    EXPECT_TRUE(d.run(g).ok());
    const auto first = std::tuple{D, d.now(), d.stats().frames, d.stats().frames_kept};
    if (gpu_only) {
      // The next graph is submitted at 2D, after the three waiting frames arrived: they go first,
      // [2D, 2.3D]; only frame 2 (1.6D) ends by its next vsync. Its kernels end at 4.3D.
      EXPECT_TRUE(d.run(g).ok());
      EXPECT_NEAR(d.now(), 4.3 * D, 1e-9 * D);
      EXPECT_EQ(d.stats().frames_kept, 1u);
    }
    return first;
  };
  // Frames at 0, 0.8D and 1.6D all wait for both kernels: none runs inside the graph.
  const auto [D, end, frames, kept] = timeline(true);
  EXPECT_NEAR(end, 2 * D, 1e-12);
  EXPECT_EQ(frames, 3u);
  EXPECT_EQ(kept, 0u);
  // Frame 0 finds nothing of the model submitted to the GPU and runs at once, kept.
  const auto [D2, end2, frames2, kept2] = timeline(false);
  EXPECT_GE(frames2, 1u);
  EXPECT_GE(kept2, 1u);
}

TEST(SimDriver, SameGraphsGiveTheSameTimelineBitForBit) {
  Fixture f = make();
  auto once = [&] {
    SimDriver d(f.soc, SyncMode::kFast);
    TaskGraph g;
    g.add(matmul_task(f.w(0), 1, "opencl", 0));
    g.add(matmul_task(f.w(2), 1, "npu", 2));
    g.add(matmul_task(f.w(1), 1, "opencl", 4, {0, 1}));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(d.run(g).ok());
    return std::tuple{d.now(), d.energy_joules(), d.stats().dram_bytes, d.stats().handoff_seconds};
  };
  EXPECT_EQ(once(), once());
}

TEST(SimDriver, RefusesWhatNoModeledUnitRuns) {
  Fixture f = make();
  SimDriver d(f.soc, SyncMode::kFast);
  TaskGraph g;
  g.add(matmul_task(f.w(0), 1, "cuda", 0));
  Status st = d.run(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'cuda'"), std::string::npos) << st.message();
  TaskGraph rope;
  Task t = matmul_task(f.w(0), 4, "npu", 0);
  t.call->kind = graph::OpKind::kRope;
  t.call->head_dim = 128;
  rope.add(t);
  st = d.run(rope);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no graph for rope"), std::string::npos) << st.message();
}

TEST(SimDriver, RuntimePrepareKeepsTheNpuBusy) {
  Fixture f = make();
  SimDriver d(f.soc, SyncMode::kFast);
  ASSERT_TRUE(d.charge_prepare("npu", 0.1, "a graph").ok());
  TaskGraph g;
  g.add(matmul_task(f.w(0), 32, "npu", 0));
  ASSERT_TRUE(d.run(g).ok());
  EXPECT_NEAR(d.now(), 0.1 + alone(d, g.tasks()[0]), 1e-12);
  EXPECT_DOUBLE_EQ(d.stats().runtime_prepare_seconds, 0.1);
}

// sd8gen3 with a third unit: CPU cores (kind cpu) with numbers of their own, timed on every
// profile point at 3x the GPU (a test unit: its sources say so).
std::string soc_with_cpu_unit() {
  std::ifstream in(SocModel::data_dir() + "/soc/sd8gen3.json");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str());
  auto leaf = [](double v) { return nlohmann::json{{"value", v}, {"source", "assumption: a test unit (tests/sim)"}}; };
  j["units"]["cpu"] = {{"kind", "cpu"},           {"peak_flops", leaf(400e9)},  {"achieved_flops", leaf(200e9)},
                       {"kernel_fixed_s", leaf(5e-6)}, {"submit_s", leaf(2e-6)},  {"finish_s", leaf(30e-6)},
                       {"dram_cap_bytes_per_s", leaf(20e9)}, {"active_w", leaf(4.0)}, {"idle_w", leaf(0.2)},
                       {"profile_scale", leaf(1.0)}};
  for (auto& p : j["profile_points"]["points"]) p["cpu_us"] = 3.0 * p["gpu_us"].get<double>();
  return j.dump();
}

TEST(SimDriver, AnExtraUnitOfTheSocRunsTasksOnItsOwnNumbers) {
  Fixture f = make();
  auto soc = SocModel::from_json_text(soc_with_cpu_unit(), "with-cpu.json", SocModel::data_dir() + "/npu");
  ASSERT_TRUE(soc.ok()) << soc.status().message();
  ASSERT_EQ(soc->unit_names(), "cpu, gpu, npu");
  const ComputeUnit* cpu = soc->find("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->kind, devices::DeviceKind::kCpu);
  SimDriver d(*soc, SyncMode::kBlocking);
  TaskGraph g;
  g.add(matmul_task(f.w(0), 1, "cpu", 0));        // a decode GEMV on the cpu unit
  g.add(matmul_task(f.w(0), 1, "opencl", 2, {0}));  // then on the gpu unit: one handoff
  const double on_cpu = alone(d, g.tasks()[0]), on_gpu = alone(d, g.tasks()[1]);
  // Its own latency fit (3x the GPU's points) prices the same kernel well above the GPU.
  EXPECT_GT(on_cpu, 2.0 * on_gpu);
  double bytes = 0, flops = 0;
  TaskCostModel::traffic(*g.tasks()[0].call, &bytes, &flops);
  EXPECT_DOUBLE_EQ(on_cpu, cpu->kernels.kernel_fixed_s + bytes * cpu->kernels.matmul.s_per_byte + flops * cpu->kernels.matmul.s_per_flop);
  ASSERT_TRUE(d.run(g).ok());
  EXPECT_DOUBLE_EQ(d.stats().busy_seconds.at("cpu"), on_cpu);
  EXPECT_DOUBLE_EQ(d.stats().busy_seconds.at("gpu"), on_gpu);
  // The handoff waits on the cpu unit's own blocking wait and pays the gpu unit's submit.
  ASSERT_EQ(d.stats().handoffs, 1u);
  EXPECT_NEAR(d.now() - on_cpu - on_gpu, soc->sync.flag_write_s + cpu->kernels.finish_s + soc->find("gpu")->kernels.submit_s, 2e-9);
  // Its power counts: idle, the cpu unit draws its idle_w; busy, its active_w.
  SocModel without_cpu_power = *soc;
  without_cpu_power.find("cpu")->kernels.active_w = 0;
  without_cpu_power.find("cpu")->kernels.idle_w = 0;
  SimDriver d0(without_cpu_power, SyncMode::kBlocking);
  ASSERT_TRUE(d0.run(g).ok());
  EXPECT_NEAR(d.energy_joules() - d0.energy_joules(), 4.0 * on_cpu + 0.2 * (d.now() - on_cpu), 1e-12);
  // The trace has a track for it.
  const std::string trace = ::testing::TempDir() + "/with-cpu-trace.json";
  ASSERT_TRUE(d.write_trace(trace).ok());
  std::ifstream t(trace);
  std::stringstream ts;
  ts << t.rdbuf();
  EXPECT_NE(ts.str().find("\"cpu\""), std::string::npos);
  std::remove(trace.c_str());
}

TEST(SimDriver, ADeviceTheSocHasNoUnitForIsRefusedByName) {
  Fixture f = make();
  SimDriver d(f.soc, SyncMode::kFast);
  TaskGraph g;
  g.add(matmul_task(f.w(0), 1, "cpu", 0));
  Status st = d.run(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no unit for device 'cpu'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("its units: gpu, npu"), std::string::npos) << st.message();
  EXPECT_FALSE(d.charge_prepare("cpu", 0.1, "a graph").ok());
  EXPECT_EQ(d.now(), 0.0) << "nothing ran";
  // A SoC without an npu refuses the npu's tasks the same way.
  nlohmann::json j = nlohmann::json::parse(soc_with_cpu_unit());
  j["units"].erase("npu");
  j["profile_points"].erase("npu_target");
  for (auto& p : j["profile_points"]["points"]) p.erase("npu_us");
  auto no_npu = SocModel::from_json_text(j.dump(), "no-npu.json", SocModel::data_dir() + "/npu");
  ASSERT_TRUE(no_npu.ok()) << no_npu.status().message();
  SimDriver dn(*no_npu, SyncMode::kFast);
  TaskGraph gn;
  gn.add(matmul_task(f.w(0), 1, "npu", 0));
  st = dn.run(gn);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no unit for device 'npu'"), std::string::npos) << st.message();
}

// A whole request on a SoC of a cpu and an npu (no gpu): the SoC's roles put the GPU's work on the
// cpu unit; on sd8gen3 the same partition is refused, naming the cpu.
TEST(SimDriver, SimulateRunsOnTheSocsUnitsByRole) {
  nlohmann::json j = nlohmann::json::parse(soc_with_cpu_unit());
  j["units"].erase("gpu");
  for (auto& p : j["profile_points"]["points"]) p.erase("gpu_us");
  auto soc = SocModel::from_json_text(j.dump(), "cpu-npu.json", SocModel::data_dir() + "/npu");
  ASSERT_TRUE(soc.ok()) << soc.status().message();
  auto roles = soc->roles();
  ASSERT_TRUE(roles.ok()) << roles.status().message();
  EXPECT_EQ(roles->gpu, "cpu");
  EXPECT_EQ(roles->npu, "npu");
  auto model = shape_only_preset("internlm2-1.8b", DType::Q4_0);
  ASSERT_TRUE(model.ok());
  SimulateOptions o;
  o.partition.strategy = Strategy::kHybrid;
  o.partition.standard_lengths = {32, 64};
  roles->apply_to(o.partition);
  o.prompt = 40;
  o.gen = 2;
  auto r = simulate(**model, *soc, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->busy_s.at("cpu"), 0.0);
  EXPECT_GT(r->busy_s.at("npu"), 0.0);
  EXPECT_EQ(r->busy_s.count("gpu"), 0u);
  auto gen3 = SocModel::load_named("sd8gen3");
  ASSERT_TRUE(gen3.ok());
  auto refused = simulate(**model, *gen3, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no unit for device 'cpu'"), std::string::npos) << refused.status().message();
}

}  // namespace
}  // namespace tandem::sim
