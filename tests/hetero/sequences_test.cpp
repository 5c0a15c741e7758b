// Several sequences in one forward pass (a server's slots): each must get exactly what it would
// alone. Three sequences are prefilled (two of them in one mixed chunk) and then decoded greedily
// together, one row each per pass; a one-sequence forward runs each sequence on its own, and the
// logits and tokens must agree at every step.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/graph_forward.h"
#include "runtime/sampler.h"
#include "tests/model/test_models.h"

namespace tandem {
namespace {

double relative_gap(std::span<const float> got, std::span<const float> want) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, double(std::fabs(got[i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  return worst / scale;
}

struct Case {
  Arch arch;
  DType weights;
  DType kv;
};

class Sequences : public ::testing::TestWithParam<Case> {};

TEST_P(Sequences, EachSequenceGetsWhatItWouldAlone) {
  const Case c = GetParam();
  auto model = testing::load_or_die(testing::small_model_path(c.arch, c.weights, c.arch != Arch::kLlama));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab, context = 48, batch = 16, steps = 12;
  CpuForwardOptions solo_options{2, context, batch, 1};
  CpuForwardOptions many_options{2, context, batch, 3};
  auto solo = make_cpu_forward(model, solo_options, {c.kv, c.kv});
  auto many = make_cpu_forward(model, many_options, {c.kv, c.kv});
  ASSERT_TRUE(solo.ok()) << solo.status().message();
  ASSERT_TRUE(many.ok()) << many.status().message();
  ASSERT_EQ((*many)->sequences(), 3);

  std::vector<std::vector<TokenId>> prompts = {{}, {}, {}};
  const int lengths[3] = {5, 9, 6};
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < lengths[s]; ++i) prompts[size_t(s)].push_back(TokenId((i * 7919 + s * 104729 + 11) % n_vocab));

  // Alone: each sequence's prompt, then greedy steps; the logits of every step kept.
  std::vector<std::vector<std::vector<float>>> want(3);
  for (int s = 0; s < 3; ++s) {
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    ASSERT_TRUE((*solo)->eval(prompts[size_t(s)], 0, logits.data()).ok());
    int n_past = lengths[s];
    for (int step = 0; step <= steps; ++step) {
      want[size_t(s)].push_back(logits);
      const TokenId next = argmax(logits);
      if (step == steps) break;
      ASSERT_TRUE((*solo)->eval(std::span(&next, 1), n_past++, logits.data()).ok());
    }
  }

  // Together: sequence 0's prompt alone, then 1 and 2 in one mixed chunk, then decode steps of all
  // three per pass; sequence 2 joins the decode one step late (a slot admitted mid-flight).
  std::vector<float> out(size_t(3 * n_vocab));
  SequenceTokens first{0, prompts[0], 0, true};
  ASSERT_TRUE((*many)->eval_sequences(std::span(&first, 1), out.data()).ok());
  EXPECT_LT(relative_gap(std::span(out).first(size_t(n_vocab)), want[0][0]), 1e-4);
  SequenceTokens pair[2] = {{1, prompts[1], 0, true}, {2, prompts[2], 0, true}};
  ASSERT_TRUE((*many)->eval_sequences(pair, out.data()).ok());
  EXPECT_LT(relative_gap(std::span(out).first(size_t(n_vocab)), want[1][0]), 1e-4);
  EXPECT_LT(relative_gap(std::span(out).subspan(size_t(n_vocab), size_t(n_vocab)), want[2][0]), 1e-4);

  int done[3] = {0, 0, 0}, n_past[3] = {lengths[0], lengths[1], lengths[2]};
  TokenId next[3];
  for (int s = 0; s < 3; ++s) next[s] = argmax(want[size_t(s)][0]);
  for (int pass = 0; pass <= steps; ++pass) {
    std::vector<SequenceTokens> parts;
    std::vector<int> who;
    for (int s = 0; s < 3; ++s) {
      if (done[s] == steps || (s == 2 && pass == 0)) continue;
      parts.push_back({s, std::span(&next[s], 1), n_past[s], true});
      who.push_back(s);
    }
    if (parts.empty()) break;
    ASSERT_TRUE((*many)->eval_sequences(parts, out.data()).ok());
    for (size_t i = 0; i < who.size(); ++i) {
      const int s = who[i];
      std::span<const float> got = std::span(out).subspan(i * size_t(n_vocab), size_t(n_vocab));
      ++done[s];
      ++n_past[s];
      EXPECT_LT(relative_gap(got, want[size_t(s)][size_t(done[s])]), 1e-4) << "sequence " << s << " step " << done[s];
      next[s] = argmax(got);
      ASSERT_EQ(next[s], argmax(want[size_t(s)][size_t(done[s])])) << "sequence " << s << " step " << done[s];
    }
  }
  for (int s = 0; s < 3; ++s) EXPECT_EQ(done[s], steps);
}

INSTANTIATE_TEST_SUITE_P(Archs, Sequences,
                         ::testing::Values(Case{Arch::kLlama, DType::Q8_0, DType::F32},
                                           Case{Arch::kLlama, DType::Q4_0, DType::F16},
                                           Case{Arch::kQwen3, DType::Q8_0, DType::Q8_0},
                                           Case{Arch::kGemma2, DType::F16, DType::F16}),
                         [](const auto& info) {
                           return std::string(arch_name(info.param.arch)) + "_" +
                                  std::string(dtype_name(info.param.weights)) + "_kv_" +
                                  std::string(dtype_name(info.param.kv));
                         });

TEST(Sequences, RefusesAnUnknownOrRepeatedSequenceAndAnOverfullPass) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto many = make_cpu_forward(model, {2, 32, 4, 2});
  ASSERT_TRUE(many.ok());
  std::vector<float> out(size_t(2 * model->config().n_vocab));
  const TokenId t[5] = {1, 2, 3, 4, 5};
  SequenceTokens unknown[1] = {{2, std::span(t, 1), 0, true}};
  EXPECT_FALSE((*many)->eval_sequences(unknown, out.data()).ok());
  SequenceTokens twice[2] = {{1, std::span(t, 1), 0, true}, {1, std::span(t, 1), 1, true}};
  EXPECT_FALSE((*many)->eval_sequences(twice, out.data()).ok());
  SequenceTokens overfull[2] = {{0, std::span(t, 3), 0, true}, {1, std::span(t, 2), 0, true}};
  Status s = (*many)->eval_sequences(overfull, out.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("batch of 4"), std::string::npos) << s.message();
  SequenceTokens past_end[2] = {{0, std::span(t, 1), 31, true}, {1, std::span(t, 2), 31, true}};
  EXPECT_FALSE((*many)->eval_sequences(past_end, out.data()).ok());
}

}  // namespace
}  // namespace tandem
