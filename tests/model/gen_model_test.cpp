#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "model/gen_model.h"
#include "model/gguf/gguf.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/model/test_models.h"

namespace tandem {
namespace {

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

GenModelOptions test_small(DType type, uint64_t seed, int threads) {
  GenModelOptions o;
  o.shape = *model_preset("test-small");
  o.type = type;
  o.seed = seed;
  o.n_threads = threads;
  o.vocab_path = testing::repo_vocab();
  return o;
}

TEST(GenModel, SameSeedSameBytesWhateverTheThreadCount) {
  const std::string a = ::testing::TempDir() + "gen-a.gguf", b = ::testing::TempDir() + "gen-b.gguf",
                    c = ::testing::TempDir() + "gen-c.gguf";
  ASSERT_TRUE(generate_model(test_small(DType::Q4_0, 7, 1), a).ok());
  ASSERT_TRUE(generate_model(test_small(DType::Q4_0, 7, 3), b).ok());
  ASSERT_TRUE(generate_model(test_small(DType::Q4_0, 8, 2), c).ok());
  EXPECT_EQ(slurp(a), slurp(b));
  EXPECT_NE(slurp(a), slurp(c));
}

TEST(GenModel, PresetShapesTypeAndTokenizerAreWritten) {
  const std::string p = ::testing::TempDir() + "gen-q8.gguf";
  ASSERT_TRUE(generate_model(test_small(DType::Q8_0, 1, 2), p).ok());
  auto m = testing::load_or_die(p);
  ASSERT_TRUE(m);
  const ModelShape s = *model_preset("test-small");
  EXPECT_EQ(m->config().dim, s.dim);
  EXPECT_EQ(m->config().n_layers, s.n_layers);
  EXPECT_EQ(m->config().n_kv_heads, s.n_kv_heads);
  EXPECT_EQ(m->config().ffn_dim, s.ffn_dim);
  EXPECT_EQ(m->config().n_vocab, 32000);
  EXPECT_EQ(m->layers()[0].wq.type, DType::Q8_0);
  EXPECT_EQ(m->layers()[0].attn_norm.type, DType::F32);
  EXPECT_EQ(*m->file().get_int("general.file_type"), 7);
  EXPECT_EQ(m->tokenizer().vocab().model, "llama");
}

// A cut vocabulary keeps the first tokens with their scores and types, and the embedding has that
// many rows; a vocabulary with merges is refused (a merge could build a token that was cut).
TEST(GenModel, VocabLimitKeepsTheFirstTokens) {
  const std::string p = ::testing::TempDir() + "gen-cut.gguf";
  GenModelOptions o = test_small(DType::F32, 1, 2);
  o.vocab_limit = 300;
  const Status st = generate_model(o, p);
  ASSERT_TRUE(st.ok()) << st.message();
  auto m = testing::load_or_die(p);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().n_vocab, 300);
  EXPECT_EQ(m->tokenizer().n_vocab(), 300);
  EXPECT_EQ(m->token_embd().rows, 300);
  auto full = gguf::GgufFile::open(testing::repo_vocab());
  ASSERT_TRUE(full.ok());
  auto want = Tokenizer::read_vocab(**full);
  auto got = Tokenizer::read_vocab(m->file());
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(got->tokens, std::vector<std::string>(want->tokens.begin(), want->tokens.begin() + 300));
  EXPECT_EQ(got->scores, std::vector<float>(want->scores.begin(), want->scores.begin() + 300));
  EXPECT_EQ(got->token_types, std::vector<int32_t>(want->token_types.begin(), want->token_types.begin() + 300));
  EXPECT_EQ(got->bos, want->bos);

  o.vocab_path = testing::shared_dir() + "/testdata/vocab/ggml-vocab-qwen2.gguf";
  const Status merges = generate_model(o, p);
  EXPECT_FALSE(merges.ok());
  EXPECT_NE(merges.message().find("tokenizer.ggml.merges"), std::string::npos) << merges.message();
}

// A phi3 preset's vocabulary is Phi-3's 32064, as llama.cpp's converter writes it: Llama 2's tokens,
// then its chat tokens as control tokens and padding, so llama.cpp (which requires <|endoftext|> in a
// model named phi3) and the chat template's <|user|> ... <|end|> find them. The layers are shrunk.
TEST(GenModel, Phi3PresetHasPhi3sAddedTokens) {
  const std::string p = ::testing::TempDir() + "gen-phi3.gguf";
  GenModelOptions o = test_small(DType::Q8_0, 1, 2);
  const ModelShape small = o.shape;
  o.shape = *model_preset("phi3-mini");
  o.shape.dim = small.dim;
  o.shape.n_layers = 1;
  o.shape.n_heads = small.n_heads;
  o.shape.n_kv_heads = small.n_heads;
  o.shape.ffn_dim = small.ffn_dim;
  const Status st = generate_model(o, p);
  ASSERT_TRUE(st.ok()) << st.message();
  auto m = testing::load_or_die(p);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().n_vocab, 32064);
  EXPECT_EQ(m->token_embd().rows, 32064);
  auto got = Tokenizer::read_vocab(m->file());
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->tokens.size(), 32064u);
  ASSERT_EQ(got->scores.size(), 32064u);
  ASSERT_EQ(got->token_types.size(), 32064u);
  EXPECT_EQ(got->tokens[32000], "<|endoftext|>");
  EXPECT_EQ(got->tokens[32007], "<|end|>");
  EXPECT_EQ(got->tokens[32010], "<|user|>");
  EXPECT_EQ(got->token_types[32010], 3);
  EXPECT_EQ(got->tokens[32063], "[PAD32063]");
  EXPECT_EQ(got->token_types[32063], 2);
  EXPECT_EQ(got->tokens[31999], (*Tokenizer::read_vocab(**gguf::GgufFile::open(testing::repo_vocab()))).tokens[31999]);
  EXPECT_EQ(got->eos, 32000);
  // The chat tokens are one token each.
  EXPECT_EQ(m->tokenizer().encode("<|user|>", false, true), std::vector<TokenId>{32010});

  // Token for token what llama.cpp's converter wrote for Phi-3 (its vocabulary test file).
  const std::string phi3 = testing::shared_dir() + "/testdata/vocab/ggml-vocab-phi-3.gguf";
  auto file = gguf::GgufFile::open(phi3);
  if (!file.ok()) GTEST_SKIP() << phi3 << ": " << file.status().message();
  auto want = Tokenizer::read_vocab(**file);
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(want->tokens.size(), got->tokens.size());
  int mismatches = 0;
  for (size_t id = 0; id < got->tokens.size() && mismatches < 5; ++id) {
    if (got->tokens[id] == want->tokens[id] && got->scores[id] == want->scores[id] &&
        got->token_types[id] == want->token_types[id])
      continue;
    ++mismatches;
    ADD_FAILURE() << "token " << id << ": '" << got->tokens[id] << "' score " << got->scores[id] << " type "
                  << got->token_types[id] << ", llama.cpp's '" << want->tokens[id] << "' " << want->scores[id] << " "
                  << want->token_types[id];
  }
  EXPECT_EQ(got->eos, want->eos);
  EXPECT_EQ(got->bos, want->bos);
  EXPECT_EQ(got->pad, want->pad);
}

TEST(GenModel, PresetsHaveThePublishedShapes) {
  const ModelShape t = *model_preset("tinyllama-1.1b");
  EXPECT_EQ(t.dim, 2048);
  EXPECT_EQ(t.n_layers, 22);
  EXPECT_EQ(t.n_kv_heads, 4);
  EXPECT_EQ(t.ffn_dim, 5632);
  const ModelShape q = *model_preset("qwen2.5-0.5b");
  EXPECT_EQ(q.arch, Arch::kQwen2);
  EXPECT_EQ(q.dim, 896);
  EXPECT_TRUE(q.tied_embeddings);
  EXPECT_GT(model_preset("llama3.2-1b")->llama3_rope_factor, 0.0f);
  EXPECT_FALSE(model_preset("gpt-5").has_value());
}

TEST(GenModel, BadShapesAreRejectedByName) {
  GenModelOptions o = test_small(DType::Q4_0, 1, 1);
  o.shape.ffn_dim = 100;  // not a multiple of the 32-element block
  Status st = generate_model(o, ::testing::TempDir() + "bad.gguf");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--ffn"), std::string::npos) << st.message();
  o = test_small(DType::F32, 1, 1);
  o.shape.n_kv_heads = 3;
  st = generate_model(o, ::testing::TempDir() + "bad.gguf");
  EXPECT_NE(st.message().find("--kv-heads"), std::string::npos) << st.message();
  o = test_small(DType::F32, 1, 1);
  o.vocab_path = "/nonexistent/vocab.gguf";
  st = generate_model(o, ::testing::TempDir() + "bad.gguf");
  EXPECT_NE(st.message().find("/nonexistent/vocab.gguf"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tandem
