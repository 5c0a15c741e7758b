#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/edgellm_report.h"

namespace tandem::report {
namespace {

TEST(EdgeLlmReport, EveryTcmSizeAndSectionWithTheSearchAheadOfTheLibrary) {
  EdgeLlmReportOptions o;
  auto rep = build_edgellm_report(o);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  for (const char* s : {"### 4 MB TCM", "### 8 MB TCM", "### 16 MB TCM", "### 32 MB TCM", "## Length buckets",
                        "## Ablations", "fusion_latency.svg", "no double buffering"})
    EXPECT_NE(rep->markdown.find(s), std::string::npos) << s;
  ASSERT_GE(rep->files.size(), 5u);
  EXPECT_EQ(rep->files[0].name, "report.md");
  EXPECT_EQ(rep->files[1].name, "report.json");
  const auto j = nlohmann::json::parse(rep->files[1].text);
  for (const char* mb : {"4", "8", "16", "32"}) {
    const auto& f = j["fusion"][mb];
    // The search is never slower than one kernel per op, and never moves more bytes.
    EXPECT_LE(f["ours"]["latency_ms"].get<double>(), f["operator library"]["latency_ms"].get<double>()) << mb;
    EXPECT_LE(f["ours"]["traffic_gb"].get<double>(), f["operator library"]["traffic_gb"].get<double>()) << mb;
    EXPECT_DOUBLE_EQ(f["mega fusion"]["power_proxy"].get<double>(), 1.0);
    for (const char* s : {"operator library", "local fusion", "mega fusion", "ours"}) {
      const double busy = f[s]["hottest_arrays_busy"].get<double>();
      EXPECT_GT(busy, 0.0) << mb << " " << s;  // every strategy's hottest cluster holds a matmul
      EXPECT_LE(busy, 1.0) << mb << " " << s;
    }
  }
  // More TCM never makes the search slower.
  EXPECT_LE(j["fusion"]["32"]["ours"]["latency_ms"].get<double>(), j["fusion"]["4"]["ours"]["latency_ms"].get<double>());
  EXPECT_LE(j["buckets"]["optimized"]["latency_proxy_ms"].get<double>(), j["buckets"]["pow2"]["latency_proxy_ms"].get<double>());
  EXPECT_GT(j["ablation"]["no double buffering"]["latency"].get<double>(), 1.0);
}

// The power budget of "ours" is the operator library's own draw: no strategy table may show the
// search above it, in prefill or decode, and dropping the budget may only make the search faster.
TEST(EdgeLlmReport, TheSearchKeepsTheLibrarysPowerInBothPhases) {
  auto rep = build_edgellm_report(EdgeLlmReportOptions{});
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  for (const char* s : {"## Fusion strategies in decode", "### 16 MB TCM, decode", "## Ablations in decode"})
    EXPECT_NE(rep->markdown.find(s), std::string::npos) << s;
  const auto j = nlohmann::json::parse(rep->files[1].text);
  for (const char* phase : {"fusion", "fusion_decode"})
    for (const char* mb : {"4", "8", "16", "32"}) {
      const auto& f = j[phase][mb];
      ASSERT_TRUE(f.contains("ours")) << phase << " " << mb;
      EXPECT_LE(f["ours"]["peak_w"].get<double>(), f["operator library"]["peak_w"].get<double>() * (1 + 1e-12)) << phase << " " << mb;
      EXPECT_LE(f["ours"]["latency_ms"].get<double>(), f["operator library"]["latency_ms"].get<double>()) << phase << " " << mb;
      // One decode row moves the same weights as a prefill but KBs of activations instead of MBs.
      if (std::string(phase) == "fusion_decode") {
        EXPECT_LT(f["ours"]["traffic_gb"].get<double>(), j["fusion"][mb]["ours"]["traffic_gb"].get<double>());
      }
    }
  for (const char* key : {"ablation", "ablation_decode"}) {
    ASSERT_TRUE(j[key].contains("no power constraint")) << key;
    EXPECT_LE(j[key]["no power constraint"]["latency"].get<double>(), 1.0 + 1e-12) << key;
    EXPECT_GT(j[key]["no double buffering"]["latency"].get<double>(), 1.0) << key;
  }
}

TEST(EdgeLlmReport, BadOptionsAreNamed) {
  EdgeLlmReportOptions o;
  o.model_preset = "nope";
  auto r = build_edgellm_report(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'nope'"), std::string::npos);
  o = {};
  o.tcm_mb = {0};
  EXPECT_FALSE(build_edgellm_report(o).ok());
  o = {};
  o.lengths = "bogus";
  EXPECT_FALSE(build_edgellm_report(o).ok());
}

}  // namespace
}  // namespace tandem::report
