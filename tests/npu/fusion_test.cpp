// The fusion-cluster search: exact against brute force, never worse than the greedy reference,
// and the strategies' traffic in the order fusion promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/gen_model.h"
#include "npu/fusion/clustering.h"
#include "test_util.h"

namespace tandem::npu::fusion {
namespace {

TargetModel with_tcm(uint64_t bytes) {
  TargetModel t = testing::target();
  t.tcm.bytes = bytes;
  return t;
}

FusionGraph layer(const TargetModel& t, const std::string& preset, uint64_t rows, uint64_t context) {
  return decoder_layer_graph(t, config_of_shape(*model_preset(preset)), rows, context, DType::Q4_0);
}

bool within(const Clustering& p, const ClusteringOptions& o) {
  for (size_t k = 0; k < p.starts.size(); ++k) {
    const size_t end = k + 1 < p.starts.size() ? p.starts[k + 1] : SIZE_MAX;
    if (end - p.starts[k] == 1) continue;  // single ops are always allowed
    if (!p.clusters[k].feasible || (o.power_cap_w > 0 && p.clusters[k].power_w > o.power_cap_w)) return false;
  }
  return true;
}

// The layer the fusion model prices is the decoder's op list: every op in order, each reading what
// the decoder feeds it, K and V leaving for the cache, the layer input read from DDR by the first
// norm and the first residual.
TEST(Fusion, TheLayerGraphIsTheDecodersOpList) {
  const FusionGraph g = layer(testing::target(), "llama3.2-1b", 16, 64);
  std::vector<std::string> names;
  for (const FusionOp& op : g.ops) names.push_back(op.name);
  EXPECT_EQ(names, (std::vector<std::string>{"attn_norm", "q", "k", "v", "rope_q", "rope_k", "attention", "o", "residual_1",
                                             "ffn_norm", "gate", "up", "swiglu", "down", "residual_2"}));
  auto index = [&](const std::string& n) { return int(std::find(names.begin(), names.end(), n) - names.begin()); };
  auto inputs = [&](const std::string& n) { return g.ops[size_t(index(n))].inputs; };
  EXPECT_EQ(inputs("attention"), (std::vector<int>{index("rope_q"), index("rope_k"), index("v")}));
  EXPECT_EQ(inputs("swiglu"), (std::vector<int>{index("gate"), index("up")}));
  EXPECT_EQ(inputs("residual_2"), (std::vector<int>{index("down"), index("residual_1")}));
  EXPECT_EQ(inputs("ffn_norm"), (std::vector<int>{index("residual_1")}));
  for (const char* n : {"rope_k", "v", "residual_2"}) EXPECT_TRUE(g.ops[size_t(index(n))].output) << n;
  for (const char* n : {"q", "rope_q", "attention", "residual_1"}) EXPECT_FALSE(g.ops[size_t(index(n))].output) << n;
  for (const char* n : {"attn_norm", "residual_1"}) {
    EXPECT_EQ(g.ops[size_t(index(n))].ext_in_key, "layer_input") << n;
    EXPECT_EQ(g.ops[size_t(index(n))].ext_in_bytes, 16u * 2048 * 2) << n;
  }
  // Qwen3: per-head q/k norms between the projections and rope, over the 2048-wide attention.
  const FusionGraph q3 = layer(testing::target(), "qwen3-0.6b", 8, 64);
  std::vector<std::string> q3names;
  for (const FusionOp& op : q3.ops) q3names.push_back(op.name);
  EXPECT_EQ(std::vector<std::string>(q3names.begin(), q3names.begin() + 8),
            (std::vector<std::string>{"attn_norm", "q", "k", "v", "q_norm", "k_norm", "rope_q", "rope_k"}));
  const TargetModel& t = testing::target();
  const FusionOp q = linear_op(t, "q", 8, 1024, 2048, DType::Q4_0);
  EXPECT_EQ(q3.ops[1].weight_bytes, q.weight_bytes) << "q projects the 1024 embedding to 16 heads of 128";
}

TEST(Fusion, SearchIsExactAgainstBruteForce) {
  for (uint64_t tcm : {150000ull, 1ull << 20, 8ull << 20})
    for (double cap : {0.0, 0.9, 1.2}) {
      const TargetModel t = with_tcm(tcm);
      const FusionGraph g = layer(t, "test-small", 16, 64);
      const size_t n = g.ops.size();
      ASSERT_LE(n, 20u);
      ClusteringOptions o;
      o.cluster.tcm_bytes = tcm;
      o.power_cap_w = cap;
      double best = INFINITY;
      for (uint64_t mask = 0; mask < (1ull << (n - 1)); ++mask) {  // bit i: cut before op i+1
        std::vector<size_t> starts = {0};
        for (size_t i = 1; i < n; ++i)
          if (mask >> (i - 1) & 1) starts.push_back(i);
        ClusterOptions spill = o.cluster;
        spill.allow_spill = true;
        Clustering p = evaluate(g, starts, "brute", t, spill);
        // evaluate() spills; admissibility is judged without spilling, as the search does.
        bool ok = true;
        for (size_t k = 0; k < starts.size() && ok; ++k) {
          const size_t last = (k + 1 < starts.size() ? starts[k + 1] : n) - 1;
          if (last == starts[k]) continue;
          ClusterCost c = cluster_cost(g, starts[k], last, t, o.cluster);
          ok = c.feasible && (cap <= 0 || c.power_w <= cap);
        }
        if (ok) best = std::min(best, p.seconds);
      }
      const Clustering s = search_partition(g, t, o);
      EXPECT_NEAR(s.seconds, best, best * 1e-12) << "tcm " << tcm << " cap " << cap;
      EXPECT_TRUE(within(s, o));
    }
}

TEST(Fusion, SearchNeverWorseThanNaive) {
  for (const char* preset : {"llama3.2-1b", "qwen2.5-0.5b", "tinyllama-1.1b"})
    for (uint64_t rows : {1ull, 64ull, 512ull})
      for (uint64_t mb : {4ull, 8ull, 16ull, 32ull})
        for (double cap_scale : {0.0, 0.95, 1.0}) {
          const TargetModel t = with_tcm(mb << 20);
          const FusionGraph g = layer(t, preset, rows, std::max<uint64_t>(rows, 1024));
          ClusteringOptions o;
          o.cluster.tcm_bytes = t.tcm.bytes;
          o.power_cap_w = cap_scale * operator_library(g, t, o.cluster).peak_power_w;
          const Clustering s = search_partition(g, t, o), n = naive_partition(g, t, o);
          EXPECT_LE(s.seconds, n.seconds * (1 + 1e-12)) << preset << " rows " << rows << " " << mb << " MB cap " << o.power_cap_w;
          EXPECT_TRUE(within(s, o)) << preset;
          EXPECT_TRUE(within(n, o)) << preset;
        }
}

TEST(Fusion, TrafficFollowsTheFusionDepth) {
  const TargetModel t = with_tcm(32ull << 20);
  const FusionGraph g = layer(t, "llama3.2-1b", 512, 512);
  ClusterOptions o;
  o.tcm_bytes = t.tcm.bytes;
  const Clustering lib = operator_library(g, t, o), local = local_fusion(g, t, o), mega = mega_fusion(g, t, o);
  EXPECT_GT(lib.external_bytes, local.external_bytes);
  EXPECT_GT(local.external_bytes, mega.external_bytes);
  // The operator library moves every weight once and every intermediate out and back in.
  uint64_t weights = 0, expected = 0;
  for (const FusionOp& op : g.ops) weights += op.weight_bytes;
  expected = weights;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    expected += g.ops[i].ext_in_bytes + g.ops[i].out_bytes;
    for (int p : g.ops[i].inputs) expected += g.ops[size_t(p)].out_bytes;
  }
  EXPECT_EQ(lib.external_bytes, expected);
  // With everything resident, one cluster moves weights, the layer input once, the KV cache and
  // the results that leave: K, V and the layer output.
  uint64_t leaving = 0;
  for (const FusionOp& op : g.ops)
    if (op.output) leaving += op.out_bytes;
  EXPECT_EQ(mega.external_bytes, weights + g.ops[0].ext_in_bytes + g.ops[6].ext_in_bytes + leaving);
}

TEST(Fusion, DoubleBufferingAndTcmMatter) {
  const TargetModel t = with_tcm(16ull << 20);
  const FusionGraph g = layer(t, "llama3.2-1b", 256, 1024);
  ClusteringOptions o;
  o.cluster.tcm_bytes = t.tcm.bytes;
  const double with = search_partition(g, t, o).seconds;
  o.cluster.double_buffer = false;
  EXPECT_GT(search_partition(g, t, o).seconds, with * 1.05);
  o.cluster.double_buffer = true;
  o.cluster.tcm_bytes = 1 << 20;
  EXPECT_GT(search_partition(g, t, o).external_bytes, search_partition(g, t, {{16ull << 20, true, false}, 0}).external_bytes);
}

}  // namespace
}  // namespace tandem::npu::fusion
