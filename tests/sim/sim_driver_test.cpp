// The SimDriver's invariants on constructed task graphs: one unit runs one task at a time, units
// run concurrently, DRAM bandwidth is shared, cross-unit handoffs cost what the sync protocol
// costs, and everything is deterministic.
#include <gtest/gtest.h>

#include "model/gen_model.h"
#include "sim/sim_driver.h"

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

double alone(SimDriver& d, const Task& t) {
  auto u = unit_of_device(t.device);
  auto c = d.costs().cost(t, *u);
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
    auto c = d.costs().cost(t, *unit_of_device(t.device));
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
      EXPECT_NEAR(first - a - b, s.sync.flag_write_s + s.gpu.finish_s + s.npu.submit_s, 1e-9);
    }
    EXPECT_EQ(d.stats().handoffs, 2u);
  }
  EXPECT_LT(handoff[1], handoff[0]) << "fast sync hands off sooner than a clFinish-like wait";
  EXPECT_GT(handoff[1], 0.0);
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
  d.charge_prepare(0.1, "a graph");
  TaskGraph g;
  g.add(matmul_task(f.w(0), 32, "npu", 0));
  ASSERT_TRUE(d.run(g).ok());
  EXPECT_NEAR(d.now(), 0.1 + alone(d, g.tasks()[0]), 1e-12);
  EXPECT_DOUBLE_EQ(d.stats().runtime_prepare_seconds, 0.1);
}

}  // namespace
}  // namespace tandem::sim
