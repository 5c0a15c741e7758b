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
