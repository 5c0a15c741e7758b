// The profiler on this machine's real devices, on a tiny model, for any device set: every device
// times every part and length under its role (runtime/device_roles.h), the handoff is measured
// between devices that exist (and skipped, saying why, with one), the solver can decide from the
// cost DB, and the host SoC description it writes has one unit per device, loads and is
// self-consistent.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "devices/registry.h"
#include "planner/device_profiler.h"
#include "planner/perf_model.h"
#include "planner/solver.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem::planner {
namespace {

using Seen = std::set<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>>;

Seen seen_points(const CostDb& db) {
  Seen seen;
  for (const CostPoint& c : db.points) {
    EXPECT_GT(c.seconds, 0);
    EXPECT_GE(c.of, c.out);
    seen.insert({c.unit, c.of, c.out, c.in, c.n});
  }
  return seen;
}

// Every part at lengths 1 and 32 on each of `roles`, nothing else.
void expect_every_part(const CostDb& db, const ProfileSpace& space, const std::vector<std::string>& roles) {
  const std::vector<ProfileJob> jobs = profile_jobs(space, 32);
  EXPECT_EQ(db.points.size(), jobs.size() * 2 /* lengths 1, 32 */ * roles.size());
  const Seen seen = seen_points(db);
  for (const ProfileJob& j : jobs)
    for (int64_t n : {1, 32})
      for (const std::string& u : roles) EXPECT_TRUE(seen.count({u, j.parent_rows, j.rows, j.in, n})) << u << " " << j.rows << " of " << j.parent_rows;
}

ProfileSpace small_space(const Model& model, size_t shapes) {
  ProfileSpace space;
  space.shapes = splittable_shapes(model);
  if (space.shapes.size() > shapes) space.shapes.resize(shapes);
  space.standard_lengths = {32};
  return space;
}

// The three kinds at once: the cpu is the fallback (recorded as "cpu"), opencl the GPU's role, the
// npu the NPU's; the handoff is opencl -> npu.
TEST(DeviceProfiler, ProfilesThreeDevicesUnderTheirRolesAndDescribesTheHost) {
  auto model = ::tandem::testing::load_or_die(::tandem::testing::small_model_path(Arch::kLlama, DType::Q4_0));
  auto gpu = devices::open_device("opencl", model, 2);
  if (!gpu.ok()) TANDEM_OPENCL_MISSING("opencl is not available here: " << gpu.status().message());
  auto cpu = devices::open_device("cpu", model, 2);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  auto npu = devices::open_device("npu", model, 2);
  ASSERT_TRUE(npu.ok()) << npu.status().message();
  const ProfileSpace space = small_space(*model, 2);
  std::vector<double> progress;
  auto p = profile_devices({cpu->get(), gpu->get(), npu->get()}, *model, space, 1, [&](double f) { progress.push_back(f); });
  ASSERT_TRUE(p.ok()) << p.status().message();
  const CostDb& db = p->db;
  expect_every_part(db, space, {"cpu", "gpu", "npu"});
  EXPECT_NE(db.source.find("devices cpu,opencl,npu"), std::string::npos) << db.source;
  ASSERT_EQ(p->host.devices.size(), 3u);
  EXPECT_EQ(p->host.devices[0].role, "cpu");
  EXPECT_EQ(p->host.devices[1].role, "gpu");
  EXPECT_EQ(p->host.devices[2].role, "npu");
  EXPECT_TRUE(p->host.handoff_measured);
  EXPECT_EQ(p->host.handoff, "opencl -> npu");
  EXPECT_GT(db.sync_fast_s, 0);
  EXPECT_GT(db.sync_blocking_s, 0);
  EXPECT_GT(db.copy_bytes_per_s, 1e8);
  EXPECT_GT(db.profile_seconds, 0);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), 1.0);
  for (const auto& d : p->host.devices) {
    EXPECT_GT(d.submit_s, 0) << d.name;
    EXPECT_GE(d.roundtrip_s, d.submit_s) << d.name;
  }

  // The solver decides from measured data (the GPU's and NPU's roles; the fallback's points are
  // for reading).
  const PerfModels perf(db);
  const MatmulShape& s = space.shapes.front();
  auto d = decide(perf, db, s.out, s.in, 32, SyncMode::kFast);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(d->alternatives.empty());

  // The host description has the three units, loads, carries the measured points, and its
  // calibration is its own fit.
  auto text = host_soc_json(*p, "hexagon-v75", sim::SocModel::data_dir() + "/npu");
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto soc = sim::SocModel::from_json_text(*text, "host.json", sim::SocModel::data_dir() + "/npu");
  ASSERT_TRUE(soc.ok()) << soc.status().message();
  EXPECT_EQ(soc->name, "host");
  EXPECT_EQ(soc->unit_names(), "cpu, gpu, npu");
  EXPECT_EQ(soc->find("cpu")->kind, devices::DeviceKind::kCpu);
  EXPECT_EQ(soc->find("gpu")->kind, devices::DeviceKind::kGpu);
  EXPECT_EQ(soc->find("npu")->kind, devices::DeviceKind::kNpu);
  EXPECT_EQ(soc->profile_points.size(), p->host.points.size());
  for (const sim::ProfilePoint& pt : soc->profile_points) EXPECT_EQ(pt.seconds.size(), 3u);
  auto refit = soc->fit_npu_calibration(*soc->find("npu"));
  ASSERT_TRUE(refit.ok());
  EXPECT_NEAR(refit->stack_factor / soc->find("npu")->npu.calibration.stack_factor, 1.0, 1e-6);
  EXPECT_NE(text->find("measured by tandem profile --devices cpu,opencl,npu"), std::string::npos);
  // The simulator takes the SoC's roles: the GPU's to the gpu unit, the cpu as fallback.
  auto roles = soc->roles();
  ASSERT_TRUE(roles.ok());
  EXPECT_EQ(roles->gpu, "gpu");
  EXPECT_EQ(roles->npu, "npu");
  EXPECT_EQ(roles->fallbacks, std::vector<std::string>{"cpu"});
}

// One device: the cpu takes the GPU's role; there is no handoff to measure, and the host
// description is one cpu unit.
TEST(DeviceProfiler, ProfilesOneDeviceAndSkipsTheHandoff) {
  auto model = ::tandem::testing::load_or_die(::tandem::testing::small_model_path(Arch::kLlama, DType::Q4_0));
  auto cpu = devices::open_device("cpu", model, 2);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  const ProfileSpace space = small_space(*model, 2);
  auto p = profile_devices({cpu->get()}, *model, space, 1);
  ASSERT_TRUE(p.ok()) << p.status().message();
  expect_every_part(p->db, space, {"gpu"});
  EXPECT_NE(p->db.source.find("devices cpu on"), std::string::npos) << p->db.source;
  EXPECT_FALSE(p->host.handoff_measured);
  EXPECT_NE(p->host.handoff.find("one device (cpu)"), std::string::npos) << p->host.handoff;
  EXPECT_EQ(p->db.sync_fast_s, 0);
  EXPECT_EQ(p->db.sync_blocking_s, 0);
  auto back = CostDb::from_json_text(p->db.to_json(), "cpu-db.json");
  ASSERT_TRUE(back.ok()) << back.status().message();

  auto text = host_soc_json(*p, "hexagon-v75", sim::SocModel::data_dir() + "/npu");
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto soc = sim::SocModel::from_json_text(*text, "host.json", sim::SocModel::data_dir() + "/npu");
  ASSERT_TRUE(soc.ok()) << soc.status().message();
  EXPECT_EQ(soc->unit_names(), "cpu");
  EXPECT_EQ(soc->units[0].kind, devices::DeviceKind::kCpu);
  EXPECT_EQ(soc->of_kind(devices::DeviceKind::kNpu), nullptr);
  EXPECT_EQ(text->find("npu"), std::string::npos) << "no npu measured, none described";
  auto roles = soc->roles();
  ASSERT_TRUE(roles.ok());
  EXPECT_EQ(roles->gpu, "cpu");
  EXPECT_EQ(roles->npu, "");
}

// A device that a neighbour slows: two of every three kernels wait 20 ms before they run.
class ContendedDevice final : public devices::Device {
 public:
  explicit ContendedDevice(std::unique_ptr<devices::Device> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  devices::DeviceCaps caps() const override { return inner_->caps(); }
  bool supports(const graph::OpCall& call) const override { return inner_->supports(call); }
  Result<std::unique_ptr<devices::Completion>> submit(const graph::OpCall& call) override {
    if (submitted_++ % 3 != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return inner_->submit(call);
  }

 private:
  std::unique_ptr<devices::Device> inner_;
  int submitted_ = 0;
};

// The profile is cached and solved from again, so it holds what the device does, not the
// moment's contention: with two of three timed runs slowed, every point is the fast run (a
// median would read 20 ms).
TEST(DeviceProfiler, KeepsEachPointsFastestRunNotTheContendedOnes) {
  auto model = ::tandem::testing::load_or_die(::tandem::testing::small_model_path(Arch::kLlama, DType::Q4_0));
  auto cpu = devices::open_device("cpu", model, 1);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  ContendedDevice contended(std::move(*cpu));
  const ProfileSpace space = small_space(*model, 1);
  auto p = profile_devices({&contended}, *model, space, 3);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_FALSE(p->db.points.empty());
  for (const CostPoint& c : p->db.points) EXPECT_LT(c.seconds, 0.010) << c.out << " of " << c.of << " at n = " << c.n;
  ASSERT_EQ(p->host.devices.size(), 1u);
  EXPECT_LT(p->host.devices[0].roundtrip_s, 0.010);
}

TEST(DeviceProfiler, RefusesBadSetsRepetitionsAndEmptySpaces) {
  auto model = ::tandem::testing::load_or_die(::tandem::testing::small_model_path(Arch::kLlama, DType::Q4_0));
  auto npu = devices::open_device("npu", model, 2);
  ASSERT_TRUE(npu.ok());
  ProfileSpace space;
  space.shapes = splittable_shapes(*model);
  auto r = profile_devices({npu->get()}, *model, space, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--reps 0"), std::string::npos);
  r = profile_devices({npu->get()}, *model, space, 1);
  ASSERT_FALSE(r.ok()) << "an npu alone runs static graphs only";
  EXPECT_NE(r.status().message().find("runs static graphs only"), std::string::npos) << r.status().message();
  r = profile_devices({npu->get(), npu->get()}, *model, space, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("one device of each kind"), std::string::npos) << r.status().message();
  EXPECT_FALSE(profile_devices({}, *model, space, 1).ok());
  space.shapes.clear();
  EXPECT_FALSE(profile_devices({npu->get()}, *model, space, 1).ok());
}

}  // namespace
}  // namespace tandem::planner
