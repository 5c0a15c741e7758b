// The HeteroInfer report on a small configuration: every section is there, the plots and JSON are
// written, the numbers are the simulator's (table cells and headline rows equal a direct
// simulate() of the same scenario), they agree with what the SoC description and the model's
// shapes imply on their own, and the paper's numbers sit beside ours.
#include <gtest/gtest.h>

#include <map>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/gen_model.h"
#include "planner/perf_model.h"
#include "planner/plan.h"
#include "planner/profiler.h"
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
  o.workloads = {{"tiny", 40, 3}};
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

// One test reads the full report (ctest runs each test in a process of its own; the report takes
// seconds under the sanitizers).
TEST(HeteroInferReport, HasEverySectionPlotThePapersNumbersAndTheSimulatorsOwn) {
  const HeteroInferReport& rep = report();
  for (const char* section : {"## 1. Calibration", "## 1b. Held-out validation", "## 2. Prefill", "## 3. Dynamic", "## 4. Decode", "## 5. Fast synchronization",
                              "## 6. Prefill ablation", "## 7. Energy", "## 8. Which inputs drive", "## 9. Beside a game", "## 10. End-to-end workloads", "## Headline"}) {
    EXPECT_NE(rep.markdown.find(section), std::string::npos) << section;
  }
  std::vector<std::string> names;
  for (const ReportFile& f : rep.files) names.push_back(f.name);
  for (const char* f : {"report.md", "report.json", "prefill_vs_length.svg", "dynamic_lengths.svg", "decode.svg", "ablation.svg", "energy.svg"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), f), names.end()) << f;
  }
  EXPECT_NE(rep.headline_table.find("51.12"), std::string::npos) << "InternLM decode, paper";
  EXPECT_NE(rep.headline_table.find("1092.0"), std::string::npos) << "InternLM prefill 256, paper";
  EXPECT_NE(rep.markdown.find("2.24"), std::string::npos) << "dynamic-length speedup over online-prepare, paper";

  // The numbers are the simulator's own (and the paper's stand beside them):
  const nlohmann::json& j = rep.json;
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
  // Eight SoC inputs, then each of the six points moved on each of the two units.
  EXPECT_EQ(j["sensitivity"].size(), 8u + 12u);
  // Leave-one-out over the six points for both units; a held-out prediction is not the fit's.
  ASSERT_EQ(j["held_out"].size(), 2u);
  for (const auto& unit : j["held_out"]) {
    ASSERT_EQ(unit["points"].size(), 6u);
    EXPECT_GE(unit["rms_log_held_out"].get<double>(), unit["rms_log_fitted"].get<double>()) << unit["unit"];
  }
  // Beside a game: sharing the GPU never speeds prefill up, and GPU-only inference (whole matmuls
  // on the GPU) leaves the game fewer frames than hetero-layer (the GPU runs only small ops).
  ASSERT_EQ(j["game"]["rows"].size(), 3u);
  std::map<std::string, double> fps, queue_first_fps;
  for (const auto& r : j["game"]["rows"]) {
    EXPECT_LE(r["with_game_tok_s"].get<double>(), r["alone_tok_s"].get<double>()) << r.dump();
    EXPECT_GT(r["frames"].get<int>(), 0) << r.dump();
    fps[r["config"].get<std::string>()] = r["game_fps"].get<double>();
    const auto& q = r["queue_first"];
    EXPECT_LE(q["with_game_tok_s"].get<double>(), r["alone_tok_s"].get<double>()) << r.dump();
    queue_first_fps[r["config"].get<std::string>()] = q["game_fps"].get<double>();
  }
  EXPECT_LT(fps["gpu-only"], fps["hetero-layer"]);
  // A driver that runs the model's submitted kernels first: GPU-only prefill is one submitted run,
  // so no frame gets in (the paper's 0 FPS); hetero-layer's GPU waits on the NPU and frames land.
  EXPECT_LT(queue_first_fps["gpu-only"], 1.0);
  EXPECT_GT(queue_first_fps["hetero-layer"], queue_first_fps["gpu-only"] + 10);
  // The workload: one row, three requests, hetero-tensor ahead of GPU-only end to end.
  ASSERT_EQ(j["workloads"]["rows"].size(), 1u);
  const auto& w = j["workloads"]["rows"][0];
  EXPECT_LT(w["hetero_tensor_s"].get<double>(), w["gpu_only_s"].get<double>());
  // The paper's fast-sync baseline (copies, clFinish per GPU kernel) is slower than the protocol
  // toggle alone, in decode above all.
  for (const auto& r : j["fast_sync"]) {
    EXPECT_LT(r["copy_finish_baseline"].get<double>(), r["blocking"].get<double>()) << r.dump();
    EXPECT_LT(r["blocking"].get<double>(), r["fast"].get<double>()) << r.dump();
  }
  // A slower NPU can only make the NPU-heavy prefill slower.
  EXPECT_LT(j["sensitivity"][0]["prefill_change"].get<double>(), 0);

  // The 256-token row, rerun: gpu-only, hetero-layer (strategy "layer") and hetero-tensor (the
  // solver's plan for this SoC, profiled on it, as `tandem plan --soc` builds it).
  const nlohmann::json& row256 = j["prefill_vs_length"][1];
  ASSERT_EQ(row256["length"], 256);
  o.prompt = 256;
  o.partition.strategy = Strategy::kGpuOnly;
  auto gpu = sim::simulate(**model, *soc, o);
  o.partition.strategy = Strategy::kLayer;
  auto layer = sim::simulate(**model, *soc, o);
  ASSERT_TRUE(gpu.ok() && layer.ok());
  EXPECT_DOUBLE_EQ(row256["gpu_only"].get<double>(), gpu->prefill_tok_s);
  EXPECT_DOUBLE_EQ(row256["hetero_layer"].get<double>(), layer->prefill_tok_s);
  planner::ProfileSpace space;
  space.shapes = planner::splittable_shapes(**model);
  auto db = planner::profile_soc(*soc, space);
  ASSERT_TRUE(db.ok()) << db.status().message();
  auto plan = planner::build_plan(planner::PerfModels(*db), *db, space.shapes, 1024, SyncMode::kFast);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  o.partition.decider = planner::decider_from_plan(std::make_shared<const planner::Plan>(std::move(*plan)));
  auto tensor = sim::simulate(**model, *soc, o);
  ASSERT_TRUE(tensor.ok());
  EXPECT_DOUBLE_EQ(row256["hetero_tensor"].get<double>(), tensor->prefill_tok_s);
  // The headline rows print those numbers.
  auto cell = [](double v, int prec) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, v);
    return std::string(b);
  };
  const std::string& head = report().headline_table;
  EXPECT_NE(head.find("| prefill 256, InternLM-1.8B, tok/s | " + cell(tensor->prefill_tok_s, 1) + " |"), std::string::npos) << head;
  EXPECT_NE(head.find("| hetero-layer / gpu-only at 256 | " + cell(layer->prefill_tok_s / gpu->prefill_tok_s, 2) + " |"),
            std::string::npos) << head;
  // Prefill matmuls on the NPU beat the GPU at 256 rows (SEEDS profile points: a 4096x4096 weight
  // at n = 256 takes the GPU 10841 us and the NPU 1884 us).
  EXPECT_GT(layer->prefill_tok_s, gpu->prefill_tok_s);

  // Numbers against what the SoC description and the model's shapes imply on their own, and the
  // directions the mechanisms imply (none holds by construction). In this test, not one of its
  // own: each test process builds the report (seconds).
  const ModelConfig c = config_of_shape(*model_preset("internlm2-1.8b"));
  const double D = c.dim, KV = c.kv_dim(), F = c.ffn_dim, L = c.n_layers;
  // Online-prepare at 135 tokens builds one graph per layer matmul at run time (q, k, v, o, gate,
  // up, down: 7 per layer), each priced fixed + per byte of its f16 input and output rows.
  const nlohmann::json& dyn = j["dynamic_lengths"][0];
  ASSERT_EQ(dyn["length"], 135);
  const double io_cols = (D + D) + 2 * (D + KV) + (D + D) + 2 * (D + F) + (F + D);
  const auto& prep = soc->find("npu")->npu.target.prepare;
  const double build_s = L * (7 * prep.fixed_s + prep.per_byte_s * 135 * io_cols * 2);
  EXPECT_NEAR(dyn["online_prepare_build_s"].get<double>(), build_s, build_s * 1e-12);
  // Just above the standard 128: padding runs the 256-row graphs, npu-pipe the 128-row ones and
  // the 7-row rest in the 32-row ones (160 rows): npu-pipe is faster.
  EXPECT_GT(dyn["npu_pipe"].get<double>(), dyn["padding"].get<double>());
  // Decode streams every layer weight and the output projection (vocab x dim; q4_0: 18 bytes per
  // 32 weights) at least once per token.
  const nlohmann::json& dec = j["decode"][0];
  ASSERT_EQ(dec["model"], "internlm2-1.8b");
  const double weight_bytes = (L * (2 * D * D + 2 * D * KV + 3 * D * F) + double(c.n_vocab) * D) / 32 * 18;
  for (const char* k : {"gpu_only", "hetero_tensor"}) {
    const double gb_s = dec[std::string(k) + "_gb_s"].get<double>(), tok_s = dec[std::string(k) + "_tok_s"].get<double>();
    EXPECT_GE(gb_s * 1e9, tok_s * weight_bytes) << k;
  }
  // Fast sync (sleep for the predicted time, then poll) against blocking waits (clFinish, the
  // NPU's interrupt path): every handoff waits less, in prefill and decode alike.
  for (const auto& r : j["fast_sync"]) EXPECT_GT(r["fast"].get<double>(), r["blocking"].get<double>()) << r.dump();
}

TEST(HeteroInferReport, WritesItsFilesAndRefusesBadOptions) {
  const std::string dir = ::testing::TempDir() + "/tandem-report-test";
  std::filesystem::remove_all(dir);
  // A smaller report than the full one above (one prefill length, no sensitivity sweep): the
  // files are what is checked here.
  HeteroInferReportOptions lean = small();
  lean.prefill_lengths = {32};
  lean.sensitivity = false;
  auto built = build_heteroinfer_report(lean);
  ASSERT_TRUE(built.ok()) << built.status().message();
  ASSERT_TRUE(write_report_files(built->files, dir).ok());
  std::ifstream md(dir + "/report.md");
  std::stringstream s;
  s << md.rdbuf();
  EXPECT_EQ(s.str(), built->markdown);
  EXPECT_TRUE(nlohmann::json::accept(std::ifstream(dir + "/report.json")));
  EXPECT_FALSE(write_report_files(built->files, "/proc/none/here").ok());

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
