#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "runtime/sync/latency_predictor.h"

namespace tandem::sync {
namespace {

TEST(LatencyPredictor, UnknownKeyHasNoPrediction) {
  LatencyPredictor p;
  EXPECT_FALSE(p.predict("ffn_down").has_value());
  EXPECT_FALSE(p.predict(uint64_t{7}).has_value());
  EXPECT_EQ(p.size(), 0u);
}

TEST(LatencyPredictor, FirstObservationIsThePrediction) {
  LatencyPredictor p(0.25);
  p.observe("qkv", 812'000);
  ASSERT_TRUE(p.predict("qkv").has_value());
  EXPECT_EQ(*p.predict("qkv"), 812'000);
}

TEST(LatencyPredictor, AlphaOneUsesThePreviousLayer) {
  LatencyPredictor p(1.0, 0.0);
  for (int64_t d : {100'000, 250'000, 180'000}) {
    p.observe("ffn_up", d);
    EXPECT_EQ(*p.predict("ffn_up"), d) << "layer N+1 predicted by layer N";
  }
}

TEST(LatencyPredictor, ConvergesPerKeyIndependently) {
  LatencyPredictor p(0.3, 0.0);
  // Two kernels observed layer after layer with +-10% deterministic jitter, after a cold first
  // layer that ran 5x slower (page faults, cold caches).
  p.observe("attn_qkv", 2'000'000);
  p.observe("ffn_down", 7'000'000);
  for (int layer = 0; layer < 40; ++layer) {
    const int64_t jitter = (layer % 3 - 1) * 10'000;  // -10/0/+10 us
    p.observe("attn_qkv", 400'000 + jitter * 4);
    p.observe("ffn_down", 1'400'000 + jitter * 14);
  }
  EXPECT_NEAR(double(*p.predict("attn_qkv")), 400'000.0, 40'000.0);
  EXPECT_NEAR(double(*p.predict("ffn_down")), 1'400'000.0, 140'000.0);
  auto e = p.entry("ffn_down");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->count, 41u);
  EXPECT_EQ(e->max_ns, 7'000'000);
  EXPECT_EQ(e->min_ns, 1'400'000 - 140'000);
  EXPECT_EQ(p.size(), 2u);
}

TEST(LatencyPredictor, TracksAStepChange) {
  LatencyPredictor p(0.5);
  for (int i = 0; i < 10; ++i) p.observe("k", 100'000);
  for (int i = 0; i < 10; ++i) p.observe("k", 300'000);
  EXPECT_NEAR(double(*p.predict("k")), 300'000.0, 1'000.0);
}

TEST(LatencyPredictor, OneOutlierDoesNotBlowUpThePrediction) {
  LatencyPredictor clipped(0.5, 2.0), raw(0.5, 0.0);
  for (LatencyPredictor* p : {&clipped, &raw}) {
    for (int i = 0; i < 5; ++i) p->observe("k", 200'000);
    p->observe("k", 5'000'000);  // the kernel's thread was preempted for ~5 ms
  }
  EXPECT_EQ(*clipped.predict("k"), 300'000) << "clipped to 2x the mean, then averaged";
  EXPECT_EQ(*raw.predict("k"), 2'600'000);
  EXPECT_EQ(clipped.entry("k")->max_ns, 5'000'000) << "statistics keep the raw value";
  EXPECT_DOUBLE_EQ(raw.outlier_clip(), 0.0);
}

TEST(LatencyPredictor, IntegerKeysAndNegativeDurations) {
  LatencyPredictor p;
  p.observe(uint64_t{3}, 50'000);
  p.observe(uint64_t{3}, -5);  // ignored
  EXPECT_EQ(*p.predict(uint64_t{3}), 50'000);
  EXPECT_FALSE(p.predict(uint64_t{4}).has_value());
  p.clear();
  EXPECT_FALSE(p.predict(uint64_t{3}).has_value());
}

TEST(LatencyPredictor, ConcurrentObserversAndPredictors) {
  LatencyPredictor p(0.1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p, t] {
      const std::string key = t % 2 ? "k1" : "k0";
      for (int i = 0; i < 1000; ++i) {
        p.observe(key, 1000 * (t % 2 + 1));
        (void)p.predict(key);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(p.entry("k0")->count, 2000u);
  EXPECT_EQ(p.entry("k1")->count, 2000u);
  EXPECT_EQ(*p.predict("k0"), 1000);
  EXPECT_EQ(*p.predict("k1"), 2000);
}

}  // namespace
}  // namespace tandem::sync
