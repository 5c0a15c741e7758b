#include <gtest/gtest.h>

#include <map>

#include "runtime/sampler.h"

namespace tandem {
namespace {

TEST(Sampler, GreedyPicksTheArgmaxAndTheFirstOnTies) {
  Sampler s(SamplerOptions::greedy());
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.9f}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{5.0f, 1.0f, 5.0f}), 0);
  EXPECT_EQ(argmax(std::vector<float>{-3.0f, -2.0f, -2.5f}), 1);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[size_t(i)] = float(i % 7) * 0.3f;
  auto draw = [&](uint64_t seed) {
    SamplerOptions o;
    o.temperature = 1.5f;
    o.top_k = 0;
    o.top_p = 1.0f;
    o.min_p = 0.0f;
    o.seed = seed;
    Sampler s(o);
    std::vector<TokenId> out;
    for (int i = 0; i < 50; ++i) out.push_back(s.sample(logits));
    return out;
  };
  EXPECT_EQ(draw(1), draw(1));
  EXPECT_NE(draw(1), draw(2));
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  SamplerOptions o;
  o.temperature = 5.0f;
  o.top_k = 1;
  Sampler s(o);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(std::vector<float>{0.0f, 0.5f, 0.4f}), 1);
}

TEST(Sampler, TopPAndMinPCutTheTail) {
  // p = softmax([3, 2, 0, -5]) ~ [0.705, 0.259, 0.035, 0.0002]
  const std::vector<float> logits{3.0f, 2.0f, 0.0f, -5.0f};
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_k = 0;
  o.min_p = 0.0f;
  o.top_p = 0.9f;  // keeps tokens 0 and 1 only
  Sampler s(o);
  std::map<TokenId, int> counts;
  for (int i = 0; i < 2000; ++i) counts[s.sample(logits)]++;
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_EQ(counts.count(3), 0u);
  EXPECT_GT(counts[1], 300);

  o.top_p = 1.0f;
  o.min_p = 0.3f;  // token 1 has p1/p0 = e^-1 = 0.37 >= 0.3; token 2: e^-3 < 0.3
  Sampler m(o);
  counts.clear();
  for (int i = 0; i < 2000; ++i) counts[m.sample(logits)]++;
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_GT(counts[1], 300);
}

TEST(Sampler, RepetitionPenaltyDemotesSeenTokens) {
  SamplerOptions o = SamplerOptions::greedy();
  o.repeat_penalty = 2.0f;
  Sampler s(o);
  const std::vector<float> logits{2.0f, 1.5f};
  EXPECT_EQ(s.sample(logits), 0);
  s.accept(0);  // 2.0 / 2 = 1.0 < 1.5
  EXPECT_EQ(s.sample(logits), 1);
}

TEST(Sampler, InvalidOptionsNameTheOption) {
  SamplerOptions o;
  o.min_p = 2.0f;
  Status st = o.validate();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--min-p"), std::string::npos);
}

// Values outside the documented ranges are errors, not quietly "off" (issue 21: --temp -1,
// --top-p 2 and --top-k -5 were accepted).
TEST(Sampler, OutOfRangeOptionsAreErrors) {
  struct Case {
    const char* option;
    void (*set)(SamplerOptions&);
  };
  const Case cases[] = {
      {"--temp", [](SamplerOptions& o) { o.temperature = -1.0f; }},
      {"--top-p", [](SamplerOptions& o) { o.top_p = 2.0f; }},
      {"--top-p", [](SamplerOptions& o) { o.top_p = 0.0f; }},
      {"--top-k", [](SamplerOptions& o) { o.top_k = -5; }},
      {"--repeat-last-n", [](SamplerOptions& o) { o.repeat_last_n = -1; }},
  };
  for (const Case& c : cases) {
    SamplerOptions o;
    c.set(o);
    const Status st = o.validate();
    EXPECT_FALSE(st.ok()) << c.option;
    EXPECT_NE(st.message().find(c.option), std::string::npos) << st.message();
  }
  SamplerOptions edges;  // the ends of the ranges are valid
  edges.temperature = 0.0f;
  edges.top_k = 0;
  edges.top_p = 1.0f;
  EXPECT_TRUE(edges.validate().ok());
}

}  // namespace
}  // namespace tandem
