// The JSON files a user hands tandem (cost DBs, plans, SoC descriptions, NPU targets) are parsed
// strictly. Thousands of mutations of valid files — values swapped for extreme numbers or other
// types, keys dropped, bytes flipped, text cut short — must each load or fail with an error that
// names the file; never crash (this runs under ASan/UBSan in CI) or hang.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "npu/target_model.h"
#include "planner/cost_db.h"
#include "planner/plan.h"
#include "tests/planner/small_cost_db.h"
#include "sim/soc_model.h"

namespace tandem::planner {
namespace {

using nlohmann::json;
using Parse = std::function<Status(const std::string& text)>;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every node of a JSON tree, as pointers.
void nodes(json& j, std::vector<json*>& out) {
  out.push_back(&j);
  if (j.is_object() || j.is_array())
    for (auto& child : j) nodes(child, out);
}

std::string mutate(const json& good, std::mt19937& rng) {
  const std::vector<json> replacements = {nullptr, -1, 0, 1, 1.5, -1e308, 1e308, "x", json::array(), json::object(), true,
                                          INT64_MAX, UINT64_MAX, 4096, 65537, 1e-300};
  json j = good;
  switch (rng() % 5) {
    case 0:
    case 1: {  // replace one node
      std::vector<json*> all;
      nodes(j, all);
      *all[rng() % all.size()] = replacements[rng() % replacements.size()];
      return j.dump();
    }
    case 2: {  // drop one key of some object
      std::vector<json*> all;
      nodes(j, all);
      for (int tries = 0; tries < 20; ++tries) {
        json* n = all[rng() % all.size()];
        if (n->is_object() && !n->empty()) {
          auto it = n->begin();
          std::advance(it, long(rng() % n->size()));
          n->erase(it.key());
          break;
        }
      }
      return j.dump();
    }
    case 3: {  // flip a byte
      std::string t = j.dump();
      t[rng() % t.size()] = char(rng() % 256);
      return t;
    }
    default: {  // cut the text short
      const std::string t = j.dump();
      return t.substr(0, rng() % t.size());
    }
  }
}

void survive_mutations(const std::string& good_text, const std::string& file, const Parse& parse, int count) {
  ASSERT_TRUE(parse(good_text).ok()) << parse(good_text).message();
  const json good = json::parse(good_text);
  std::mt19937 rng(1234);
  int refused = 0;
  for (int i = 0; i < count; ++i) {
    const std::string text = mutate(good, rng);
    const Status s = parse(text);
    if (s.ok()) continue;
    ++refused;
    EXPECT_EQ(s.message().rfind(file, 0), 0u) << "the error names the file: " << s.message();
  }
  EXPECT_GT(refused, count / 4) << "most mutations of a strict format are refused";
}

using testing::small_db;

TEST(JsonInputs, CostDbSurvivesMutations) {
  survive_mutations(small_db().to_json(), "cost.json",
                    [](const std::string& t) { return CostDb::from_json_text(t, "cost.json").status(); }, 5000);
}

TEST(JsonInputs, PlanSurvivesMutations) {
  const CostDb db = small_db();
  const PerfModels perf(db);
  auto plan = build_plan(perf, db, {MatmulShape{"w", 256, 256}}, 80, SyncMode::kFast);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  survive_mutations(plan->to_json(), "plan.json", [](const std::string& t) { return Plan::from_json_text(t, "plan.json").status(); }, 5000);
}

TEST(JsonInputs, SocDescriptionSurvivesMutations) {
  const std::string npu_dir = sim::SocModel::data_dir() + "/npu";
  survive_mutations(read(sim::SocModel::data_dir() + "/soc/sd8gen3.json"), "soc.json",
                    [&](const std::string& t) { return sim::SocModel::from_json_text(t, "soc.json", npu_dir).status(); }, 2000);
}

TEST(JsonInputs, NpuTargetSurvivesMutations) {
  survive_mutations(read(npu::TargetModel::default_path()), "target.json",
                    [](const std::string& t) { return npu::TargetModel::from_json_text(t, "target.json").status(); }, 2000);
}

}  // namespace
}  // namespace tandem::planner
