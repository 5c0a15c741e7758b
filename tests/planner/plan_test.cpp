// Plans and cost DBs round-trip through JSON, ranges cover every length once, and bad files are
// refused naming the field.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "planner/perf_model.h"
#include "planner/plan.h"
#include "tests/planner/small_cost_db.h"

namespace tandem::planner {
namespace {

using testing::small_db;

TEST(Plan, CoversEveryLengthOnceAndRoundTrips) {
  const CostDb db = small_db();
  const PerfModels perf(db);
  auto plan = build_plan(perf, db, {MatmulShape{"attn_q", 256, 256}}, 64, SyncMode::kFast);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->ops.size(), 1u);
  int64_t next = 1;
  for (const PlanRange& r : plan->ops[0].ranges) {
    EXPECT_EQ(r.n_min, next);
    next = r.n_max + 1;
    EXPECT_FALSE(r.why.empty());
  }
  EXPECT_EQ(next, 65);
  for (int64_t n = 1; n <= 64; ++n) {
    const PlanRange* r = plan->find(256, 256, n);
    ASSERT_NE(r, nullptr) << n;
    auto d = decide(perf, db, 256, 256, n, SyncMode::kFast);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(r->strategy, d->best.strategy) << "n=" << n;
  }
  EXPECT_EQ(plan->find(256, 256, 65), nullptr);
  EXPECT_EQ(plan->find(128, 256, 1), nullptr);

  auto back = Plan::from_json_text(plan->to_json(), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->to_json(), plan->to_json());
}

TEST(Plan, BadPlansNameTheField) {
  const CostDb db = small_db();
  const PerfModels perf(db);
  auto plan = build_plan(perf, db, {MatmulShape{"attn_q", 256, 256}}, 8, SyncMode::kFast);
  ASSERT_TRUE(plan.ok());
  const nlohmann::json good = nlohmann::json::parse(plan->to_json());
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {[](auto& j) { j["format"] = "v0"; }, "field 'format'"},
      {[](auto& j) { j["ops"][0]["ranges"][0]["strategy"] = "magic"; }, "ops[0].ranges[0].strategy"},
      {[](auto& j) { j["ops"][0]["ranges"][0]["n_min"] = 2; }, "ops[0].ranges[0].n_min"},
      {[](auto& j) { j["ops"][0]["ranges"][0]["gpu_share"] = 1.5; }, "ops[0].ranges[0].gpu_share"},
      {[](auto& j) { j["ops"][0]["out"] = -4; }, "ops[0].out"},
      {[](auto& j) { j["sync"] = "eventually"; }, "field 'sync'"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = good;
    c.edit(j);
    auto r = Plan::from_json_text(j.dump(), "plan.json");
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_NE(r.status().message().find("plan.json: "), std::string::npos);
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
}

TEST(CostDb, RoundTripsAndRefusesBadPoints) {
  const CostDb db = small_db();
  auto back = CostDb::from_json_text(db.to_json(), "cost.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->to_json(), db.to_json());
  nlohmann::json j = nlohmann::json::parse(db.to_json());
  j["points"][3]["unit"] = "tpu";
  auto bad = CostDb::from_json_text(j.dump(), "cost.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("points[3].unit"), std::string::npos) << bad.status().message();
  j = nlohmann::json::parse(db.to_json());
  j["points"][0]["seconds"] = 0;
  bad = CostDb::from_json_text(j.dump(), "cost.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("points[0].seconds"), std::string::npos);
  j = nlohmann::json::parse(db.to_json());
  j["points"][0]["of"] = 8;  // a part larger than its parent
  bad = CostDb::from_json_text(j.dump(), "cost.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("points[0].of"), std::string::npos) << bad.status().message();
}

// The same part of two parents is two entries: the solver asks for the parent it splits.
TEST(PerfModels, APartIsLookedUpUnderItsParent) {
  CostDb db;
  db.add("npu", 416, 4096, 1, 1e-4, 4096);
  db.add("npu", 416, 4096, 1, 4e-4, 1024);
  const PerfModels p(db);
  EXPECT_EQ(p.npu(416, 4096, 1, 4096), 1e-4);
  EXPECT_EQ(p.npu(416, 4096, 1, 1024), 4e-4);
  EXPECT_FALSE(p.npu(416, 4096, 1).has_value()) << "no whole 416-row weight was profiled";
}

TEST(PlanUse, ShowsOnlyTheEntriesARunTookWithTheLengthsTheyServed) {
  const CostDb db = small_db();
  const PerfModels perf(db);
  auto plan = build_plan(perf, db, {MatmulShape{"attn_q", 256, 256}}, 64, SyncMode::kFast);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto shared = std::make_shared<const Plan>(*plan);
  auto use = std::make_shared<PlanUse>(shared);
  const Decider decide_op = use->decider();
  const PlanRange* at1 = shared->find(256, 256, 1);
  const PlanRange* at40 = shared->find(256, 256, 40);
  ASSERT_TRUE(at1 && at40);
  auto c1 = decide_op(256, 256, 1);
  ASSERT_TRUE(c1.has_value());
  EXPECT_EQ(c1->strategy, at1->strategy);
  ASSERT_TRUE(decide_op(256, 256, 40).has_value());
  EXPECT_FALSE(decide_op(256, 256, 65).has_value());  // past the plan: the run's strategy applies
  EXPECT_FALSE(decide_op(128, 256, 1).has_value());   // a shape the plan lacks
  const std::string table = use->table();
  size_t rows = 0;
  for (size_t at = 0; (at = table.find("| attn_q ", at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, at1 == at40 ? 1u : 2u) << table;
  EXPECT_NE(table.find(at1->why), std::string::npos) << table;
  EXPECT_NE(table.find(at40->why), std::string::npos) << table;
  // The lengths each entry served, in its row: "1" and "40" (one row "1,40" when one range has both).
  const bool one_range = at1 == at40;
  EXPECT_NE(table.find(one_range ? "| 1,40 " : "| 40 "), std::string::npos) << table;
  if (!one_range) {
    EXPECT_NE(table.find("| 1 "), std::string::npos) << table;
  }
}

}  // namespace
}  // namespace tandem::planner
