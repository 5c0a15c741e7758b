#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/gen_model.h"
#include "npu/target_model.h"
#include "report/edgellm_report.h"

namespace tandem::report {
namespace {

// The layer's DDR traffic from its shapes alone (llama3.2-1b: dim D, kv dim KV, ffn F), `rows` new
// tokens over `context` cached ones: q4_0 weights (18 bytes per 32 weights: 16 of nibbles, an f16
// scale), f16 activations.
struct LayerBytes {
  uint64_t weights, kv_cache, layer_input, outputs, library_activations;
};
LayerBytes layer_bytes(uint64_t rows, uint64_t context) {
  const ModelConfig c = config_of_shape(*model_preset("llama3.2-1b"));
  const uint64_t D = uint64_t(c.dim), KV = uint64_t(c.kv_dim()), F = uint64_t(c.ffn_dim), a = 2 * rows;  // f16 row
  LayerBytes b;
  b.weights = (2 * D * D + 2 * D * KV + 3 * D * F) / 32 * 18;  // q o, k v, gate up down
  b.kv_cache = 2 * context * KV * 2;                            // K and V read by attention
  b.layer_input = a * D;
  b.outputs = a * (KV + KV + D);  // V and roped K to the cache, the layer's output
  // One kernel per op: each reads its inputs from DDR and writes its result there, in units of
  // one f16 row (reads + writes): attn_norm D+D, q D+D, k D+KV, v D+KV, rope_q D+D, rope_k KV+KV,
  // attention (D+KV+KV)+D, o D+D, residual_1 (D+D)+D, ffn_norm D+D, gate D+F, up D+F,
  // swiglu (F+F)+F, down F+D, residual_2 (D+D)+D: 23 D + 6 KV + 6 F.
  b.library_activations = a * (23 * D + 6 * KV + 6 * F);
  return b;
}

double gb(uint64_t bytes) { return double(bytes) / 1e9; }

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
  auto target = npu::TargetModel::load_default();
  ASSERT_TRUE(target.ok()) << target.status().message();
  // Merging two clusters into one (that fits TCM) saves at least one launch's event hand-off and
  // the second cluster's first-transfer setup (cluster_cost's overhead terms); no op's time grows,
  // since its DDR bytes can only shrink. A search that fuses anything beats the library by that.
  const double one_merge_s =
      target->seconds(target->issue.signal_latency_cycles + target->dma.setup_cycles + target->dma.row_cycles);
  ASSERT_GT(one_merge_s, 0);
  const LayerBytes prefill = layer_bytes(uint64_t(o.rows), uint64_t(o.rows)), decode = layer_bytes(1, uint64_t(o.rows));
  for (const char* phase : {"fusion", "fusion_decode"}) {
    const LayerBytes& b = std::string(phase) == "fusion" ? prefill : decode;
    for (const char* mb : {"4", "8", "16", "32"}) {
      const auto& f = j[phase][mb];
      const std::string where = std::string(phase) + " " + mb + " MB";
      // The library moves every weight, the cache, and every op's inputs and result, whatever the
      // TCM (one op's working buffers never exceed it).
      EXPECT_DOUBLE_EQ(f["operator library"]["traffic_gb"].get<double>(), gb(b.weights + b.kv_cache + b.library_activations))
          << where;
      const double lib_ms = f["operator library"]["latency_ms"].get<double>(), ours_ms = f["ours"]["latency_ms"].get<double>();
      EXPECT_LE(ours_ms, lib_ms - one_merge_s * 1e3) << where << ": the search fused nothing";
      // A cluster that fits TCM moves a subset of its ops' library bytes: fusing never adds traffic.
      EXPECT_LE(f["ours"]["traffic_gb"].get<double>(), f["operator library"]["traffic_gb"].get<double>()) << where;
      // Power proxy, library against mega fusion. Prefill: the library's hottest kernel is a matmul
      // whose arrays compute nearly all its time, while mega fusion's one cluster averages the
      // arrays' draw with the layer's vector ops and attention: the library draws more. Decode:
      // every kernel streams its weights from DDR, and a library kernel adds its launch and first
      // transfer on top (cluster_cost's overhead: time that adds no FLOPs or bytes to its energy),
      // which mega fusion pays once for the layer: the library draws less.
      const double lib_power = f["operator library"]["power_proxy"].get<double>();
      if (std::string(phase) == "fusion") EXPECT_GT(lib_power, 1.0) << where;
      else EXPECT_LT(lib_power, 1.0) << where;
      for (const char* s : {"operator library", "local fusion", "mega fusion", "ours"}) {
        const double busy = f[s]["hottest_arrays_busy"].get<double>();
        EXPECT_GT(busy, 0.0) << where << " " << s;  // every strategy's hottest cluster holds a matmul
        EXPECT_LE(busy, 1.0) << where << " " << s;
      }
    }
  }
  // Mega fusion moves only what enters or leaves the layer (the layer input read once, for
  // attn_norm and residual_1 alike) when nothing spills: in decode at every TCM (one row's
  // intermediates are KBs), and in prefill at 32 MB (the largest live set, at swiglu: gate, up
  // and swiglu results, 3 x 8 MiB, and residual_1's 2 MiB, 26 MiB). At 16 MB that set spills.
  for (const char* mb : {"4", "8", "16", "32"})
    EXPECT_DOUBLE_EQ(j["fusion_decode"][mb]["mega fusion"]["traffic_gb"].get<double>(),
                     gb(decode.weights + decode.kv_cache + decode.layer_input + decode.outputs)) << mb;
  const uint64_t prefill_unspilled = prefill.weights + prefill.kv_cache + prefill.layer_input + prefill.outputs;
  EXPECT_DOUBLE_EQ(j["fusion"]["32"]["mega fusion"]["traffic_gb"].get<double>(), gb(prefill_unspilled));
  EXPECT_GT(j["fusion"]["16"]["mega fusion"]["traffic_gb"].get<double>(), gb(prefill_unspilled) * 1.01);
  // So at 32 MB the whole prefill layer is one cluster that fits TCM, within the library's power
  // (above): a candidate of the search, which can only be as fast or faster; and it beats the
  // library, whose intermediates make the DDR round trip.
  const auto& f32 = j["fusion"]["32"];
  EXPECT_LE(f32["ours"]["latency_ms"].get<double>(), f32["mega fusion"]["latency_ms"].get<double>());
  EXPECT_LT(f32["mega fusion"]["latency_ms"].get<double>(), f32["operator library"]["latency_ms"].get<double>());
  // More TCM never makes the search slower.
  EXPECT_LE(j["fusion"]["32"]["ours"]["latency_ms"].get<double>(), j["fusion"]["4"]["ours"]["latency_ms"].get<double>());
  EXPECT_LE(j["buckets"]["optimized"]["latency_proxy_ms"].get<double>(), j["buckets"]["pow2"]["latency_proxy_ms"].get<double>());
  EXPECT_GT(j["ablation"]["no double buffering"]["latency"].get<double>(), 1.0);
}

// The power budget of "ours" is the operator library's own draw: no strategy table may show the
// search above it, in prefill or decode. In prefill no cluster draws more than the library's
// matmul kernels, so the budget does not bind; in decode it does (fused clusters draw more than
// any library kernel, see the power proxy above), and dropping it makes the search faster.
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
      // One decode row moves the same weights as a prefill but KBs of activations instead of MBs.
      if (std::string(phase) == "fusion_decode") {
        EXPECT_LT(f["ours"]["traffic_gb"].get<double>(), j["fusion"][mb]["ours"]["traffic_gb"].get<double>());
      }
    }
  for (const char* key : {"ablation", "ablation_decode"}) {
    ASSERT_TRUE(j[key].contains("no power constraint")) << key;
    EXPECT_GT(j[key]["no double buffering"]["latency"].get<double>(), 1.0) << key;
  }
  const auto& prefill = j["ablation"]["no power constraint"];
  EXPECT_DOUBLE_EQ(prefill["latency"].get<double>(), 1.0) << "in prefill the budget should not bind";
  EXPECT_DOUBLE_EQ(prefill["peak_power"].get<double>(), 1.0) << "in prefill the budget should not bind";
  const auto& decode = j["ablation_decode"]["no power constraint"];
  EXPECT_LT(decode["latency"].get<double>(), 1.0) << "in decode the budget should bind";
  EXPECT_GT(decode["peak_power"].get<double>(), 1.0) << "in decode the budget should bind";
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
