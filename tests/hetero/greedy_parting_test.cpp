// Where two greedy runs part, examine_parting finds the first differing token
// and measures both forwards' logits over the common prefix: equal forwards
// show no error; one whose logits are off by a known amount shows that amount.
#include "runtime/greedy_parting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/graph_forward.h"
#include "tests/model/test_models.h"

namespace tandem {
namespace {

// A forward whose logits are the inner one's plus `shift` on one token: a
// device that gets one row of the output projection wrong.
class ShiftedForward : public Forward {
 public:
  ShiftedForward(Forward& inner, TokenId token, float shift) : inner_(inner), token_(token), shift_(shift) {}
  Status eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits) override {
    ++calls;
    last_tokens.assign(tokens.begin(), tokens.end());
    TANDEM_RETURN_IF_ERROR(inner_.eval(tokens, n_past, logits, all_logits));
    logits[size_t(token_)] += shift_;
    return Status::Ok();
  }
  int context() const override { return inner_.context(); }
  ExecutionReport execution_report() const override { return inner_.execution_report(); }
  int calls = 0;
  std::vector<TokenId> last_tokens;

 private:
  Forward& inner_;
  TokenId token_;
  float shift_;
};

TEST(GreedyParting, FindsThePartingAndMeasuresTheLogits) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::F32));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  auto a = make_cpu_forward(model, {2, 64, 64});
  auto b = make_cpu_forward(model, {2, 64, 64});
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<TokenId> prompt{1, 450, 4996};
  const std::vector<TokenId> ref{7, 8, 9, 10}, other{7, 8, 11, 12};

  // The reference's logits after prompt + the common prefix {7, 8}.
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  ASSERT_TRUE((*a)->eval(std::vector<TokenId>{1, 450, 4996, 7, 8}, 0, logits.data()).ok());
  float scale = 0;
  for (float l : logits) scale = std::max(scale, std::fabs(l));
  const double margin = (double(logits[9]) - double(logits[11])) / scale;

  ShiftedForward same(**b, 5, 0.0f);
  auto p = examine_parting(**a, same, prompt, ref, other, n_vocab);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->index, 2u);
  EXPECT_EQ(same.last_tokens, (std::vector<TokenId>{1, 450, 4996, 7, 8})) << "prompt + the common prefix";
  EXPECT_LT(p->logit_error, 1e-6);
  EXPECT_EQ(p->reference_token, 9);
  EXPECT_EQ(p->other_token, 11);
  EXPECT_NEAR(p->margin, margin, 1e-6);

  // One logit off by 1: the error is 1 over the largest |logit|; the margin is
  // the reference's.
  ShiftedForward off(**b, 5, 1.0f);
  p = examine_parting(**a, off, prompt, ref, other, n_vocab);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->logit_error, 1.0 / scale, 1e-5);
  EXPECT_NEAR(p->margin, margin, 1e-6);
}

TEST(GreedyParting, OneStoppingEarlierIsAParting) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::F32));
  ASSERT_TRUE(model);
  auto a = make_cpu_forward(model, {2, 64, 64});
  ASSERT_TRUE(a.ok());
  auto p = examine_parting(**a, **a, {1, 2}, {3, 4, 5}, {3, 4}, model->config().n_vocab);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->index, 2u);
  EXPECT_EQ(p->reference_token, 5);
  std::vector<float> logits(static_cast<size_t>(model->config().n_vocab));
  ASSERT_TRUE((*a)->eval(std::vector<TokenId>{1, 2, 3, 4}, 0, logits.data()).ok());
  EXPECT_EQ(p->other_token, TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin()))
      << "the stopped run's choice there is what its forward ranks first";
  EXPECT_FALSE(examine_parting(**a, **a, {1, 2}, {3, 4}, {3, 4}, model->config().n_vocab).ok())
      << "equal runs do not part";
  EXPECT_FALSE(examine_parting(**a, **a, std::vector<TokenId>(70, 1), {3}, {4}, model->config().n_vocab).ok())
      << "a prefix past the context is refused, not evaluated";
}

}  // namespace
}  // namespace tandem
