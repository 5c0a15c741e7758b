// Roles by kind for every device set (runtime/device_roles.h): what the runtime, the profilers and
// the simulator's SoC units all take their roles from.
#include <gtest/gtest.h>

#include "runtime/device_roles.h"

namespace tandem {
namespace {

using devices::DeviceKind;

struct Expect {
  std::vector<std::pair<std::string, DeviceKind>> set;
  std::string gpu, npu;
  std::vector<std::string> fallbacks, roles;
  std::string handoff_to;
};

TEST(DeviceRoles, EverySetGetsItsRolesByKind) {
  const DeviceKind C = DeviceKind::kCpu, G = DeviceKind::kGpu, N = DeviceKind::kNpu;
  const std::vector<Expect> cases = {
      {{{"cpu", C}}, "cpu", "", {}, {"gpu"}, ""},
      {{{"opencl", G}}, "opencl", "", {}, {"gpu"}, ""},
      {{{"cpu", C}, {"npu", N}}, "cpu", "npu", {}, {"gpu", "npu"}, "npu"},
      {{{"opencl", G}, {"npu", N}}, "opencl", "npu", {}, {"gpu", "npu"}, "npu"},
      {{{"cpu", C}, {"opencl", G}}, "opencl", "", {"cpu"}, {"cpu", "gpu"}, "cpu"},
      {{{"cpu", C}, {"opencl", G}, {"npu", N}}, "opencl", "npu", {"cpu"}, {"cpu", "gpu", "npu"}, "npu"},
      {{{"npu", N}, {"opencl", G}, {"cpu", C}}, "opencl", "npu", {"cpu"}, {"npu", "gpu", "cpu"}, "npu"},
  };
  for (const Expect& e : cases) {
    std::string label;
    for (const auto& [name, kind] : e.set) label += name + " ";
    auto r = assign_roles(e.set, "--devices");
    ASSERT_TRUE(r.ok()) << label << r.status().message();
    EXPECT_EQ(r->gpu, e.gpu) << label;
    EXPECT_EQ(r->npu, e.npu) << label;
    EXPECT_EQ(r->fallbacks, e.fallbacks) << label;
    ASSERT_EQ(r->members.size(), e.set.size()) << label;
    for (size_t i = 0; i < e.set.size(); ++i) {
      EXPECT_EQ(r->members[i].name, e.set[i].first) << label << "members keep the set's order";
      EXPECT_EQ(r->members[i].role, e.roles[i]) << label << e.set[i].first;
      EXPECT_EQ(r->find(e.set[i].first), &r->members[i]);
    }
    EXPECT_EQ(r->handoff_target(), e.handoff_to) << label;
    PartitionOptions p;
    r->apply_to(p);
    EXPECT_EQ(p.gpu, e.gpu);
    EXPECT_EQ(p.npu, e.npu);
    EXPECT_EQ(p.fallbacks, e.fallbacks);
  }
}

TEST(DeviceRoles, RefusesSetsWithoutAnAnyShapeDeviceOrWithTwoOfAKind) {
  auto npu_only = assign_roles({{"npu", DeviceKind::kNpu}}, "--devices");
  ASSERT_FALSE(npu_only.ok());
  EXPECT_NE(npu_only.status().message().find("--devices: 'npu' runs static graphs only"), std::string::npos) << npu_only.status().message();
  auto two = assign_roles({{"gpu", DeviceKind::kGpu}, {"gpu2", DeviceKind::kGpu}}, "soc.json: units");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("soc.json: units: 'gpu' and 'gpu2' are both gpus"), std::string::npos) << two.status().message();
  EXPECT_FALSE(assign_roles({}, "--devices").ok());
}

}  // namespace
}  // namespace tandem
