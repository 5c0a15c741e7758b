// The HeteroInfer report on a small configuration: every section is there, the plots and JSON are
// written, the numbers are the simulator's (a table cell equals a direct simulate() of the same
// scenario), and the paper's numbers sit beside ours.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/gen_model.h"
#include "report/heteroinfer_report.h"
#include "sim/simulate.h"

namespace tandem::report {
namespace {

HeteroInferReportOptions small() {
  HeteroInferReportOptions o;
  o.main_model = "internlm2-1.8b";
  o.decode_models = {"internlm2-1.8b"};
  o.prefill_lengths = {32, 256};
  o.dynamic_lengths = {135};
  o.decode_gen = 2;
  o.sensitivity = true;
  return o;
}

const HeteroInferReport& report() {
  static const HeteroInferReport r = [] {
    std::vector<double> progress;
    HeteroInferReportOptions o = small();
    o.progress = [&](double f, const std::string&) { progress.push_back(f); };
    auto built = build_heteroinfer_report(o);
    EXPECT_TRUE(built.ok()) << built.status().message();
    EXPECT_FALSE(progress.empty());
    for (size_t i = 1; i < progress.size(); ++i) EXPECT_GE(progress[i], progress[i - 1]) << "progress never goes back";
    if (!progress.empty()) {
      EXPECT_EQ(progress.back(), 1.0);
    }
    return built.ok() ? *built : HeteroInferReport{};
  }();
  return r;
}

TEST(HeteroInferReport, HasEverySectionPlotAndThePapersNumbers) {
  const HeteroInferReport& r = report();
  for (const char* section : {"## 1. Calibration", "## 2. Prefill", "## 3. Dynamic", "## 4. Decode", "## 5. Fast synchronization",
                              "## 6. Prefill ablation", "## 7. Energy", "## 8. Which inputs drive", "## Headline"}) {
    EXPECT_NE(r.markdown.find(section), std::string::npos) << section;
  }
  std::vector<std::string> names;
  for (const ReportFile& f : r.files) names.push_back(f.name);
  for (const char* f : {"report.md", "report.json", "prefill_vs_length.svg", "dynamic_lengths.svg", "decode.svg", "ablation.svg", "energy.svg"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), f), names.end()) << f;
  }
  EXPECT_NE(r.headline_table.find("51.12"), std::string::npos) << "InternLM decode, paper";
  EXPECT_NE(r.headline_table.find("1092.0"), std::string::npos) << "InternLM prefill 256, paper";
  EXPECT_NE(r.markdown.find("2.24"), std::string::npos) << "dynamic-length speedup over online-prepare, paper";
}

TEST(HeteroInferReport, NumbersAreTheSimulatorsOwn) {
  const nlohmann::json& j = report().json;
  ASSERT_TRUE(j.contains("prefill_vs_length"));
  const nlohmann::json& row = j["prefill_vs_length"][0];
  ASSERT_EQ(row["length"], 32);
  auto soc = sim::SocModel::load_named("sd8gen3");
  ASSERT_TRUE(soc.ok());
  auto model = shape_only_preset("internlm2-1.8b", DType::Q4_0);
  ASSERT_TRUE(model.ok());
  sim::SimulateOptions o;
  o.partition.strategy = Strategy::kNpuOnly;
  o.prompt = 32;
  o.gen = 0;
  auto r = sim::simulate(**model, *soc, o);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(row["npu_only"].get<double>(), r->prefill_tok_s);
  // Every prefill number is a positive throughput; the calibration section carries the six points.
  for (const auto& p : j["prefill_vs_length"])
    for (const char* k : {"gpu_only", "npu_only", "hetero_layer", "hetero_tensor"}) EXPECT_GT(p[k].get<double>(), 0) << k;
  EXPECT_EQ(j["calibration"]["points"].size(), 6u);
  EXPECT_EQ(j["sensitivity"].size(), 8u);
  // A slower NPU can only make the NPU-heavy prefill slower.
  EXPECT_LT(j["sensitivity"][0]["prefill_change"].get<double>(), 0);
}

TEST(HeteroInferReport, WritesItsFilesAndRefusesBadOptions) {
  const std::string dir = ::testing::TempDir() + "/tandem-report-test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_report_files(report().files, dir).ok());
  std::ifstream md(dir + "/report.md");
  std::stringstream s;
  s << md.rdbuf();
  EXPECT_EQ(s.str(), report().markdown);
  EXPECT_TRUE(nlohmann::json::accept(std::ifstream(dir + "/report.json")));
  EXPECT_FALSE(write_report_files(report().files, "/proc/none/here").ok());

  HeteroInferReportOptions bad = small();
  bad.prefill_lengths = {2048};
  auto r = build_heteroinfer_report(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("2048"), std::string::npos);
  bad = small();
  bad.soc = "sd1";
  EXPECT_FALSE(build_heteroinfer_report(bad).ok());
  bad = small();
  bad.decode_models = {"gpt-9"};
  bad.main_model = "gpt-9";
  EXPECT_FALSE(build_heteroinfer_report(bad).ok());
}

}  // namespace
}  // namespace tandem::report
