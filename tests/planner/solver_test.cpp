// The solver on constructed cost tables: each strategy wins exactly where its costs say it must,
// and the perf models interpolate (GPU) and step (NPU) as SEEDS A.5 prescribes.
#include <gtest/gtest.h>

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
  // 300 rows: no 300-row graph. The NPU is fast on its 256-row graph but padding to... there is
  // no larger graph here, so padding is infeasible; the GPU takes the 44-row remainder.
  const CostDb db = table(1e-8, 2e-5);
  const PerfModels p(db);
  auto d = decide(p, db, 1024, 1024, 300, SyncMode::kFast);
  ASSERT_TRUE(d.ok());
  for (const Alternative& a : d->alternatives) EXPECT_NE(a.strategy, Strategy::kPadding) << "no graph holds 300 rows";
  EXPECT_TRUE(d->best.strategy == Strategy::kActivationCentric || d->best.strategy == Strategy::kHybrid ||
              d->best.strategy == Strategy::kNpuPipe || d->best.strategy == Strategy::kOnlinePrepare)
      << d->explain();
  // A graph build that costs more than everything else rules online-prepare out.
  EXPECT_NE(d->best.strategy, Strategy::kOnlinePrepare);
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
