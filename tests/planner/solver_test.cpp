// The solver on constructed cost tables: each strategy wins exactly where its costs say it must,
// and the perf models interpolate (GPU) and step (NPU) as SEEDS A.5 prescribes.
#include <gtest/gtest.h>

#include <map>

#include "planner/plan.h"
#include "planner/solver.h"

namespace tandem::planner {
namespace {

// GPU: linear in n and in weight rows; NPU: a per-length cost for each static graph.
CostDb table(double gpu_per_row_n, double npu_graph_s, std::vector<int> lengths = {32, 64, 128, 256}) {
  CostDb db;
  db.source = "constructed";
  db.standard_lengths = lengths;
  db.sync_fast_s = 10e-6;
  db.sync_blocking_s = 400e-6;
  db.copy_bytes_per_s = 1e10;
  db.prepare_fixed_s = 5e-3;
  db.prepare_per_byte_s = 1e-9;
  const int64_t in = 1024;
  for (int64_t rows : {1024, 512, 512 + 256, 256}) {
    for (int64_t n : {1, 32, 64, 128, 256}) {
      db.add("gpu", rows, in, n, gpu_per_row_n * double(rows) * double(n) + 20e-6, 1024);  // parts of a 1024-row weight
      db.add("npu", rows, in, n, npu_graph_s * double(rows) / 1024.0 * (n == 1 ? 0.5 : double(n) / 32.0), 1024);
    }
  }
  return db;
}

TEST(PerfModels, GpuInterpolatesNpuSteps) {
  const CostDb db = table(1e-9, 1e-4);
  const PerfModels p(db);
  const double g64 = *p.gpu(1024, 1024, 64), g128 = *p.gpu(1024, 1024, 128);
  EXPECT_NEAR(*p.gpu(1024, 1024, 96), (g64 + g128) / 2, 1e-12) << "linear between profiled lengths";
  EXPECT_EQ(*p.npu(1024, 1024, 65), *p.npu(1024, 1024, 128)) << "the 65-row request runs in the 128-row graph";
  EXPECT_EQ(*p.npu_graph_length(1024, 1024, 65), 128);
  EXPECT_FALSE(p.npu(1024, 1024, 257).has_value()) << "no graph holds 257 rows";
  EXPECT_FALSE(p.gpu(999, 1024, 8).has_value()) << "an unprofiled shape";
  EXPECT_EQ(p.split_rows(1024, 1024), (std::vector<int64_t>{256, 512, 768}));
}

TEST(Solver, AFastNpuWinsStandardLengthsAndTheGpuWinsWhenTheNpuIsSlow) {
  const CostDb fast_npu = table(1e-8, 1e-5);
  const PerfModels p(fast_npu);
  auto d = decide(p, fast_npu, 1024, 1024, 256, SyncMode::kFast);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->best.strategy, Strategy::kNpuOnly) << d->explain();
  EXPECT_GT(d->alternatives.size(), 1u);
  for (size_t i = 1; i < d->alternatives.size(); ++i) EXPECT_LE(d->alternatives[i - 1].seconds, d->alternatives[i].seconds);

  const CostDb slow_npu = table(1e-10, 1.0);
  const PerfModels q(slow_npu);
  auto g = decide(q, slow_npu, 1024, 1024, 256, SyncMode::kFast);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->best.strategy, Strategy::kGpuOnly) << g->explain();
}

TEST(Solver, BalancedUnitsSplitTheWeight) {
  // Equal speed per weight row on both units: splitting halves the time, so a split wins and the
  // share is near the middle.
  CostDb db = table(0, 0);
  db.points.clear();
  for (int64_t rows : {1024, 512, 768, 256})
    for (int64_t n : {1, 32, 64, 128, 256}) {
      const double t = 1e-6 * double(rows) * double(std::max<int64_t>(n, 32)) / 32.0;
      db.add("gpu", rows, 1024, n, t, 1024);
      db.add("npu", rows, 1024, n, t, 1024);
    }
  const PerfModels p(db);
  auto d = decide(p, db, 1024, 1024, 128, SyncMode::kFast);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->best.strategy, Strategy::kWeightCentric) << d->explain();
  EXPECT_DOUBLE_EQ(d->best.gpu_share, 0.5);
}

TEST(Solver, DynamicLengthsUseTheStandardPartOnTheNpu) {
  // 300 rows of the 1024x1024 weight; standard lengths 32/64/128/256, no graph holds 300 rows, so
  // neither npu-only nor padding exists. Each candidate of the SEEDS formula on table(1e-8, 2e-5),
  // with T_sync = 10 us (fast), GPU(r, n) = 1e-8 r n + 20 us (linear in n: extrapolation is exact)
  // and NPU(r, graph g) = 2e-5 r/1024 g/32:
  //   multi-tensor (best) 9 x 32 rows: max(NPU 9 x 20 = 180 us, GPU 12 rows = 122.88 + 20 us)
  //                       + sync                                                         = 0.190 ms
  //                       (2 x 128, 4 x 64 or 8 x 32 leave 44 rows on the GPU: >= 0.48 ms)
  //   npu-pipe            300 = 256 + 32 + 12 (padded to the 32-row graph):
  //                       NPU 2e-5 (8 + 1 + 1) = 200 us, + sync                        = 0.210 ms
  //   activation-centric  max(NPU 256 = 160 us, GPU 44 rows = 450.56 + 20 us) + sync     = 0.48056 ms
  //   hybrid (best split) NPU 768 rows: 256 + 44 padded to 64 = 120 + 30 us; GPU 256 rows x 300
  //                       = 768 + 20 us; max + sync                                      = 0.798 ms
  //   gpu-only            1e-8 x 1024 x 300 + 20 us                                      = 3.092 ms
  //   online-prepare      NPU exact 2e-5 x 300/32 = 187.5 us + build 5 ms + 1e-9 x 300 x
  //                       (1024 + 1024) x 2 = 1.2288 ms, + sync                          = 6.4263 ms
  //   weight-centric: no NPU graph of 300 rows
  // So nine 32-row chunks on the NPU beside 12 rows on the GPU, then npu-pipe, then activation-centric.
  const CostDb db = table(1e-8, 2e-5);
  const PerfModels p(db);
  auto d = decide(p, db, 1024, 1024, 300, SyncMode::kFast);
  ASSERT_TRUE(d.ok());
  for (const Alternative& a : d->alternatives) EXPECT_NE(a.strategy, Strategy::kPadding) << "no graph holds 300 rows";
  EXPECT_EQ(d->best.strategy, Strategy::kMultiTensor) << d->explain();
  EXPECT_EQ(d->best.npu_chunk, 32) << d->explain();
  EXPECT_EQ(d->best.npu_chunks, 9) << d->explain();
  EXPECT_NEAR(d->best.seconds, 0.190e-3, 1e-12) << d->explain();
  ASSERT_GE(d->alternatives.size(), 6u) << d->explain();
  EXPECT_EQ(d->alternatives[1].strategy, Strategy::kNpuPipe) << d->explain();
  EXPECT_NEAR(d->alternatives[1].seconds, 0.210e-3, 1e-12) << d->explain();
  EXPECT_EQ(d->alternatives[2].strategy, Strategy::kActivationCentric) << d->explain();
  EXPECT_NEAR(d->alternatives[2].seconds, 0.48056e-3, 1e-12) << d->explain();
  EXPECT_EQ(d->alternatives[3].strategy, Strategy::kHybrid) << d->explain();
  EXPECT_NEAR(d->alternatives[3].seconds, 0.798e-3, 1e-12) << d->explain();
  EXPECT_EQ(d->alternatives.back().strategy, Strategy::kOnlinePrepare) << d->explain();
  EXPECT_NEAR(d->alternatives.back().seconds, 6.4263e-3, 1e-12) << d->explain();
}

TEST(Solver, MultiTensorChoosesTheChunkLengthAndCount) {
  // An NPU whose 64-row graph is unfriendly (SEEDS NPU-2: 200 us, ten times the 32-row graph's
  // 20 us; 128 rows 400 us, 256 rows 800 us, whole weight) and the GPU of table(1e-8, .): 1e-8 r n
  // + 20 us. At n = 100 (T_sync 10 us):
  //   multi-tensor 3 x 32  max(NPU 60 us, GPU 4 rows 40.96 + 20 us)  + sync = 0.07096 ms
  //   multi-tensor 2 x 32  max(NPU 40 us, GPU 36 rows 368.64 + 20 us) + sync = 0.39864 ms
  //   npu-pipe     64 + 32 + 4 padded to 32: 200 + 20 + 20          + sync = 0.250 ms
  //   hybrid       (best) NPU 768 rows (64 + 36 padded to 64) 300 us | GPU 276 us + sync = 0.310 ms
  // so three 32-row chunks, not the one 64-row chunk activation-centric would take.
  CostDb db = table(1e-8, 0);
  std::erase_if(db.points, [](const CostPoint& p) { return p.unit == "npu"; });
  const std::map<int64_t, double> graph_s = {{1, 10e-6}, {32, 20e-6}, {64, 200e-6}, {128, 400e-6}, {256, 800e-6}};
  for (int64_t rows : {1024, 512, 512 + 256, 256})
    for (const auto& [n, s] : graph_s) db.add("npu", rows, 1024, n, s * double(rows) / 1024.0, 1024);
  const PerfModels p(db);
  auto d = decide(p, db, 1024, 1024, 100, SyncMode::kFast);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->best.strategy, Strategy::kMultiTensor) << d->explain();
  EXPECT_EQ(d->best.npu_chunk, 32) << d->explain();
  EXPECT_EQ(d->best.npu_chunks, 3) << d->explain();
  EXPECT_NEAR(d->best.seconds, 0.07096e-3, 1e-12) << d->explain();
  EXPECT_NE(d->explain().find("multi-tensor (3 x 32 rows on the npu)"), std::string::npos) << d->explain();
  // The plan keeps the chunks, through JSON too, and its decider hands them to the partitioner.
  auto plan = build_plan(p, db, {MatmulShape{"attn_q", 1024, 1024}}, 100, SyncMode::kFast);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto back = Plan::from_json_text(plan->to_json(), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  auto choice = decider_from_plan(std::make_shared<const Plan>(*back))(1024, 1024, 100);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->strategy, Strategy::kMultiTensor);
  EXPECT_EQ(choice->npu_chunk, 32);
  EXPECT_EQ(choice->npu_chunks, 3);
}

TEST(Solver, BlockingSyncMakesSplitsLessAttractive) {
  const CostDb db = table(2e-9, 2e-5);
  const PerfModels p(db);
  auto fast = decide(p, db, 1024, 1024, 1, SyncMode::kFast);
  auto blocking = decide(p, db, 1024, 1024, 1, SyncMode::kBlocking);
  ASSERT_TRUE(fast.ok() && blocking.ok());
  EXPECT_LT(fast->best.seconds, blocking->best.seconds + 1e-15);
  EXPECT_EQ(blocking->best.strategy, Strategy::kGpuOnly) << "400 us per handoff outweighs a ~10 us decode GEMV: " << blocking->explain();
}

TEST(Solver, AnUnprofiledShapeIsAnError) {
  const CostDb db = table(1e-9, 1e-4);
  const PerfModels p(db);
  auto d = decide(p, db, 4096, 4096, 8, SyncMode::kFast);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("4096x4096"), std::string::npos);
}

}  // namespace
}  // namespace tandem::planner
