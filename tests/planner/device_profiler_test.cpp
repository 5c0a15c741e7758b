// The profiler on this machine's real devices (OpenCL and the emulated NPU), on a tiny model: the
// cost DB covers every part and length with positive wall times and its parent, the solver can
// decide from it, and the host SoC description it writes loads and is self-consistent.
#include <gtest/gtest.h>

#include <set>

#include "devices/registry.h"
#include "planner/device_profiler.h"
#include "planner/perf_model.h"
#include "planner/solver.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem::planner {
namespace {

TEST(DeviceProfiler, ProfilesEveryPartOnBothDevicesAndDescribesTheHost) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  auto gpu = devices::open_device("opencl", model, 2);
  if (!gpu.ok()) TANDEM_OPENCL_MISSING("opencl is not available here: " << gpu.status().message());
  auto npu = devices::open_device("npu", model, 2);
  ASSERT_TRUE(npu.ok()) << npu.status().message();
  ProfileSpace space;
  space.shapes = splittable_shapes(*model);
  space.standard_lengths = {32};
  std::vector<double> progress;
  auto p = profile_devices(**gpu, **npu, *model, space, 1, [&](double f) { progress.push_back(f); });
  ASSERT_TRUE(p.ok()) << p.status().message();
  const CostDb& db = p->db;

  const std::vector<ProfileJob> jobs = profile_jobs(space, 32);
  EXPECT_EQ(db.points.size(), jobs.size() * 2 /* lengths 1, 32 */ * 2 /* units */);
  std::set<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>> seen;
  for (const CostPoint& c : db.points) {
    EXPECT_GT(c.seconds, 0);
    EXPECT_GE(c.of, c.out);
    seen.insert({c.unit, c.of, c.out, c.in, c.n});
  }
  for (const ProfileJob& j : jobs)
    for (int64_t n : {1, 32})
      for (const char* u : {"gpu", "npu"}) EXPECT_TRUE(seen.count({u, j.parent_rows, j.rows, j.in, n})) << u << " " << j.rows << " of " << j.parent_rows;
  EXPECT_NE(db.source.find("devices opencl,npu"), std::string::npos) << db.source;
  EXPECT_GT(db.sync_fast_s, 0);
  EXPECT_GT(db.sync_blocking_s, 0);
  EXPECT_GT(db.copy_bytes_per_s, 1e8);
  EXPECT_GT(db.profile_seconds, 0);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), 1.0);

  // The solver decides from measured data.
  const PerfModels perf(db);
  const MatmulShape& s = space.shapes.front();
  auto d = decide(perf, db, s.out, s.in, 32, SyncMode::kFast);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(d->alternatives.empty());

  // The host description loads, carries the measured points, and its calibration is its own fit.
  auto text = host_soc_json(*p, "hexagon-v75", sim::SocModel::data_dir() + "/npu");
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto soc = sim::SocModel::from_json_text(*text, "host.json", sim::SocModel::data_dir() + "/npu");
  ASSERT_TRUE(soc.ok()) << soc.status().message();
  EXPECT_EQ(soc->name, "host");
  EXPECT_EQ(soc->profile_points.size(), p->host.points.size());
  auto refit = soc->fit_npu_calibration();
  ASSERT_TRUE(refit.ok());
  EXPECT_NEAR(refit->stack_factor / soc->npu.calibration.stack_factor, 1.0, 1e-6);
  EXPECT_NE(text->find("measured by tandem profile --devices opencl,npu"), std::string::npos);
}

TEST(DeviceProfiler, RefusesBadRepetitionsAndEmptySpaces) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  auto npu = devices::open_device("npu", model, 2);
  ASSERT_TRUE(npu.ok());
  ProfileSpace space;
  space.shapes = splittable_shapes(*model);
  auto r = profile_devices(**npu, **npu, *model, space, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--reps 0"), std::string::npos);
  space.shapes.clear();
  EXPECT_FALSE(profile_devices(**npu, **npu, *model, space, 1).ok());
}

}  // namespace
}  // namespace tandem::planner
