#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "npu/target_model.h"
#include "test_util.h"

namespace tandem::npu {
namespace {

std::string read_default() {
  std::ifstream in(testing::default_target_path());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json* walk(nlohmann::json& root, const std::string& path, std::string* last) {
  nlohmann::json* node = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    if (dot == std::string::npos) { *last = path.substr(start); return node; }
    node = &(*node)[path.substr(start, dot - start)];
    start = dot + 1;
  }
}

TEST(TargetModel, DefaultLoadsWithDerivedQueries) {
  auto r = TargetModel::load(testing::default_target_path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TargetModel& t = *r;
  EXPECT_EQ(t.name, "hexagon-v75");
  EXPECT_EQ(t.matrix.tile_dim, 32);
  EXPECT_EQ(t.tcm.bytes, 8u << 20);
  EXPECT_EQ(t.tile_bytes(), 2048u);
  EXPECT_NEAR(t.peak_fp16_flops(), 17e12, 0.01 * 17e12);  // NPU-1 spec
  EXPECT_NEAR(t.dma_bytes_per_s(), 45e9, 1);             // min(DMA 60 GB/s, MEM-1 single processor)
  EXPECT_GT(t.dma_bytes_per_cycle(), 0);
  EXPECT_EQ(t.vector_lanes_fp16(), 64);
  // load_default() finds the same file through the library's compiled-in data dir.
  auto d = TargetModel::load_default();
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->matrix.clock_hz, t.matrix.clock_hz);
}

TEST(TargetModel, PrepareModelReproducesTheGraphRow) {
  // SEEDS GRAPH: whole-model online prepare 408.4 ms at 135 tokens, 2050 ms at 1000 (Llama-3-8B,
  // 224 graphs — one per NPU matmul — 5,242,880 activation bytes per token over the whole model).
  const TargetModel& t = testing::target();
  auto whole = [&](double L) { return 224 * t.prepare.fixed_s + t.prepare.per_byte_s * 5242880.0 * L; };
  EXPECT_NEAR(whole(135), 0.4084, 0.002);
  EXPECT_NEAR(whole(1000), 2.050, 0.005);
}

TEST(TargetModel, EveryRequiredFieldMissingIsNamed) {
  const std::string text = read_default();
  const auto& fields = TargetModel::required_fields();
  ASSERT_GT(fields.size(), 30u);
  for (const std::string& f : fields) {
    nlohmann::json j = nlohmann::json::parse(text);
    std::string last;
    nlohmann::json* parent = walk(j, f, &last);
    ASSERT_TRUE(parent->contains(last)) << f;
    parent->erase(last);
    auto r = TargetModel::from_json_text(j.dump(), "t.json");
    ASSERT_FALSE(r.ok()) << "removing " << f << " was accepted";
    EXPECT_NE(r.status().message().find("t.json"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("'" + f + "'"), std::string::npos) << r.status().message();
  }
}

TEST(TargetModel, WrongTypesAndValuesAreNamed) {
  const std::string text = read_default();
  struct Case { std::string field; nlohmann::json value; std::string expect; };
  const std::vector<Case> cases = {
      {"matrix.tile_dim", "32", "matrix.tile_dim.value"},
      {"tcm.bytes", -5, "tcm.bytes.value"},
      {"dma.channels", 2.5, "dma.channels.value"},
      {"matrix.clock_hz", nullptr, "matrix.clock_hz.value"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = nlohmann::json::parse(text);
    std::string last;
    (*walk(j, c.field, &last))[last]["value"] = c.value;
    auto r = TargetModel::from_json_text(j.dump(), "t.json");
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.value.dump()), std::string::npos) << r.status().message();
  }
  {  // a bare number instead of {value, source}
    nlohmann::json j = nlohmann::json::parse(text);
    j["tcm"]["bytes"] = 8388608;
    auto r = TargetModel::from_json_text(j.dump(), "t.json");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("'tcm.bytes'"), std::string::npos) << r.status().message();
  }
  {  // an assumption must give its reason
    nlohmann::json j = nlohmann::json::parse(text);
    j["dma"]["channels"]["source"] = "assumption";
    auto r = TargetModel::from_json_text(j.dump(), "t.json");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("dma.channels.source"), std::string::npos) << r.status().message();
  }
  {  // unknown (typo) field
    nlohmann::json j = nlohmann::json::parse(text);
    j["dma"]["chanels"] = {{"value", 4}, {"source", "x"}};
    auto r = TargetModel::from_json_text(j.dump(), "t.json");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("dma.chanels"), std::string::npos) << r.status().message();
  }
  {  // not JSON at all / missing file
    auto r = TargetModel::from_json_text("{ nope", "bad.json");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("bad.json"), std::string::npos);
    auto m = TargetModel::load("/nonexistent/x.json");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kNotFound);  // core/file_io.h: missing is NotFound
    EXPECT_NE(m.status().message().find("/nonexistent/x.json"), std::string::npos) << m.status().message();
  }
}

}  // namespace
}  // namespace tandem::npu
