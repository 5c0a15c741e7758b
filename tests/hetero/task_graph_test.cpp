#include <gtest/gtest.h>

#include "runtime/partition.h"
#include "runtime/task_graph.h"

namespace tandem {
namespace {

TEST(TaskGraph, VerifyRejectsForwardDependenciesAndMixedWork) {
  TaskGraph g;
  Task a;
  a.device = "host";
  a.host_step = [] {};
  a.label = std::string("a");
  g.add(a);
  Task b = a;
  b.deps = {1};  // itself: not earlier
  g.add(b);
  Status st = g.verify();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("depends on task 1"), std::string::npos) << st.message();

  TaskGraph h;
  Task c;
  c.device = "host";
  c.label = std::string("nothing to do");
  h.add(c);
  EXPECT_FALSE(h.verify().ok());
}

TEST(TaskGraph, FallbackDeviceMustBeAnotherDeviceForAKernel) {
  float y = 0;
  TaskGraph g;
  Task host;
  host.device = "host";
  host.host_step = [] {};
  host.fallback_device = "opencl";  // a host step has nothing to rerun
  host.label = std::string("merge");
  g.add(host);
  EXPECT_FALSE(g.verify().ok());

  TaskGraph same;
  Task k;
  k.device = "npu";
  k.call = graph::OpCall::matmul(nullptr, 0, 0, &y, 1, 1, &y, 1);
  k.fallback_device = "npu";
  k.label = std::string("matmul");
  same.add(k);
  Status st = same.verify();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fallback device 'npu'"), std::string::npos) << st.message();

  TaskGraph ok;
  k.fallback_device = "opencl";
  ok.add(k);
  EXPECT_TRUE(ok.verify().ok());
  EXPECT_NE(ok.dump().find("[npu|opencl]"), std::string::npos) << ok.dump();
}

TEST(Strategy, NamesRoundTripAndUnknownNamesAreListed) {
  for (const std::string& n : strategy_names()) {
    auto s = strategy_from_name(n);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(strategy_name(*s), n);
  }
  auto bad = strategy_from_name("magic");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("weight-centric"), std::string::npos);
}

}  // namespace
}  // namespace tandem
