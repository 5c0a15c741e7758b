// The fault-injection decorator: plans parse (and bad ones are refused naming their source),
// prepare failures and every-Nth run failures are reported where a real device reports them.
#include <gtest/gtest.h>

#include <cmath>

#include "devices/fault_injection.h"
#include "devices/registry.h"
#include "tests/model/test_models.h"

namespace tandem::devices {
namespace {

TEST(FaultPlan, ParsesTheThreeForms) {
  auto p = parse_fault_plan("prepare", "TANDEM_NPU_FAULT");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->fail_prepare);
  EXPECT_EQ(p->fail_run_every, 0);
  auto r = parse_fault_plan("run", "TANDEM_NPU_FAULT");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->fail_prepare);
  EXPECT_EQ(r->fail_run_every, 1);
  auto n = parse_fault_plan("run:7", "TANDEM_NPU_FAULT");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->fail_run_every, 7);
}

TEST(FaultPlan, RefusesAnythingElseNamingSourceAndValue) {
  for (const char* bad : {"", "runs", "run:", "run:0", "run:-2", "run:x", "run:99999999999", "Prepare"}) {
    auto p = parse_fault_plan(bad, "TANDEM_NPU_FAULT");
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("TANDEM_NPU_FAULT: '" + std::string(bad) + "'"), std::string::npos)
        << p.status().message();
  }
}

TEST(FaultInjectingDevice, FailsEveryNthRunAfterItRanAndEveryPrepare) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto cpu = open_device("cpu", model, 1);
  ASSERT_TRUE(cpu.ok());
  FaultInjectingDevice d(std::move(*cpu), FaultPlan{true, 3});
  EXPECT_EQ(d.name(), "cpu");
  const Weight* w = &model->layers()[0].w_up;
  std::vector<float> x(size_t(w->cols), 0.5f), y(size_t(w->rows), 0.0f);
  const OpCall call = OpCall::matmul(w, 0, w->rows, x.data(), 1, w->cols, y.data(), w->rows);
  EXPECT_FALSE(d.prepare(GraphSpec::of(call)).ok());
  for (int i = 1; i <= 6; ++i) {
    auto c = d.submit(call);
    ASSERT_TRUE(c.ok());
    const Status st = (*c)->wait();
    EXPECT_EQ(st.ok(), i % 3 != 0) << "run " << i;
    if (!st.ok()) {
      EXPECT_EQ(y[0], 1e30f) << "a failed run leaves its output wrong";
    }
  }
  EXPECT_EQ(d.faults_injected(), 3u);  // one prepare, runs 3 and 6
}

}  // namespace
}  // namespace tandem::devices
