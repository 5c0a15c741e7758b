// A model with real trained weights (llama2.c's stories260K): tandem must continue a prompt
// exactly as llama.cpp does (the expected ids were produced by llama.cpp, see
// ../shared/testdata/models/README.md).
#include <gtest/gtest.h>

#include "reference/reference_forward.h"
#include "runtime/session.h"
#include "tests/model/test_models.h"

namespace tandem {
namespace {

const std::vector<TokenId> kPrompt{1, 300, 301, 302};
const std::vector<TokenId> kLlamaCppContinuation{336, 472, 472, 465, 473, 473, 327, 339,
                                                  306, 339, 304, 473, 473, 466, 473, 473};

std::string stories_path() { return testing::shared_dir() + "/testdata/models/stories260K.gguf"; }

TEST(Stories260K, GreedyContinuationMatchesLlamaCpp) {
  auto model = testing::load_or_die(stories_path());
  ASSERT_TRUE(model);
  EXPECT_EQ(model->config().dim, 64);
  EXPECT_EQ(model->config().n_kv_heads, 4);
  for (int threads : {1, 2}) {
    auto session = Session::create(model, {threads, 0, 512});
    ASSERT_TRUE(session.ok());
    std::vector<TokenId> out;
    GenerateOptions g;
    g.n_predict = 16;
    g.stop_at_eog = false;
    g.sampler = SamplerOptions::greedy();
    ASSERT_TRUE((*session)->generate(kPrompt, g, [&](TokenId t) { out.push_back(t); return true; }).ok());
    EXPECT_EQ(out, kLlamaCppContinuation) << "threads " << threads;
  }
}

TEST(Stories260K, ReferenceAgreesWithLlamaCppToo) {
  auto model = testing::load_or_die(stories_path());
  ASSERT_TRUE(model);
  ReferenceForward ref(model);
  std::vector<double> logits;
  int pos = 0;
  for (TokenId t : kPrompt) logits = ref.step(t, pos++);
  std::vector<TokenId> out;
  for (size_t i = 0; i < kLlamaCppContinuation.size(); ++i) {
    out.push_back(TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    logits = ref.step(out.back(), pos++);
  }
  EXPECT_EQ(out, kLlamaCppContinuation);
}

}  // namespace
}  // namespace tandem
