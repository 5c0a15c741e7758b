// Vocabulary validation and read_vocab errors, plus small hand-made vocabularies whose expected
// tokenization can be worked out by hand.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "model/gguf/gguf.h"
#include "model/tokenizer/tokenizer.h"
#include "test_vocabs.h"

namespace tandem::testing {
namespace {

using gguf::Array;
using gguf::GgufWriter;
using gguf::Value;
using gguf::ValueType;

VocabData tiny_spm() {
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "ab", "<0x0A>", "<0xC3>", "<0xA9>"};
  v.scores = {0, 0, 0, -1, -2, -2, -1, -0.5f, 0, 0, 0};
  v.token_types = {2, 3, 3, 1, 1, 1, 1, 1, 6, 6, 6};
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  v.add_bos = true;
  return v;
}

VocabData tiny_bpe() {
  VocabData v;
  v.model = "gpt2";
  v.pre = "gpt-2";
  // Byte stand-ins for the letters used, then merged tokens ("Ġ" is the space byte).
  v.tokens = {"a", "b", "c", "\xC4\xA0", "ab", "bc", "abc", "\xC4\xA0" "a", "<|endoftext|>"};
  v.token_types = {1, 1, 1, 1, 1, 1, 1, 1, 3};
  v.merges = {"b c", "a b", "ab c", "\xC4\xA0 a"};
  v.bos = v.eos = 8;
  return v;
}

std::string error_of(VocabData v) {
  auto r = Tokenizer::create(std::move(v));
  return r.ok() ? std::string() : r.status().message();
}

TEST(HandMadeSpm, MergesByScoreAndFallsBackToBytes) {
  auto tok = Tokenizer::create(tiny_spm());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const Tokenizer& t = **tok;
  EXPECT_EQ(t.encode("ab", false, false), (std::vector<TokenId>{7}));       // "▁ab"
  EXPECT_EQ(t.encode("ab", true, false), (std::vector<TokenId>{1, 7}));
  EXPECT_EQ(t.encode("ba", false, false), (std::vector<TokenId>{3, 5, 4}));  // ▁ b a
  EXPECT_EQ(t.encode("\n", false, false), (std::vector<TokenId>{3, 8}));
  // "é" has no piece: its two UTF-8 bytes become byte tokens.
  EXPECT_EQ(t.encode("\xC3\xA9", false, false), (std::vector<TokenId>{3, 9, 10}));
  // A byte with neither a piece nor a byte token is <unk>.
  EXPECT_EQ(t.encode("z", false, false), (std::vector<TokenId>{3, 0}));
  EXPECT_EQ(t.decode(t.encode("ab\n\xC3\xA9", false, false)), "ab\n\xC3\xA9");
  // llama.cpp strips the prefix space only from the first piece; a leading BOS renders empty and
  // uses up that chance.
  EXPECT_EQ(t.decode(t.encode("ab", true, false)), " ab");
}

TEST(HandMadeBpe, AppliesMergesInRankOrder) {
  auto tok = Tokenizer::create(tiny_bpe());
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const Tokenizer& t = **tok;
  // "b c" outranks "a b", so "abc" is a + bc and "ab c" never gets a chance.
  EXPECT_EQ(t.encode("abc", false, false), (std::vector<TokenId>{0, 5}));
  EXPECT_EQ(t.encode("ab", false, false), (std::vector<TokenId>{4}));
  EXPECT_EQ(t.encode(" a", false, false), (std::vector<TokenId>{7}));
  EXPECT_EQ(t.encode("<|endoftext|>", false, true), (std::vector<TokenId>{8}));
  EXPECT_TRUE(t.is_eog(8));
  EXPECT_EQ(t.decode(t.encode("abc ab", false, false)), "abc ab");
}

TEST(VocabErrors, UnsupportedModel) {
  VocabData v = tiny_spm();
  v.model = "bert";
  const std::string err = error_of(v);
  EXPECT_NE(err.find("tokenizer.ggml.model"), std::string::npos) << err;
  EXPECT_NE(err.find("bert"), std::string::npos) << err;
}

TEST(VocabErrors, UnknownPreTokenizer) {
  VocabData v = tiny_bpe();
  v.pre = "no-such-pre";
  const std::string err = error_of(v);
  EXPECT_NE(err.find("tokenizer.ggml.pre"), std::string::npos) << err;
  EXPECT_NE(err.find("no-such-pre"), std::string::npos) << err;
}

TEST(VocabErrors, ScoresLengthMismatch) {
  VocabData v = tiny_spm();
  v.scores.pop_back();
  const std::string err = error_of(v);
  EXPECT_NE(err.find("tokenizer.ggml.scores"), std::string::npos) << err;
}

TEST(VocabErrors, TokenTypeLengthMismatch) {
  VocabData v = tiny_spm();
  v.token_types.push_back(1);
  EXPECT_NE(error_of(v).find("tokenizer.ggml.token_type"), std::string::npos);
}

TEST(VocabErrors, SpecialIdOutOfRange) {
  VocabData v = tiny_spm();
  v.eos = 99;
  const std::string err = error_of(v);
  EXPECT_NE(err.find("tokenizer.ggml.eos_token_id"), std::string::npos) << err;
  EXPECT_NE(err.find("99"), std::string::npos) << err;
}

TEST(VocabErrors, AddBosWithoutBos) {
  VocabData v = tiny_spm();
  v.bos = -1;
  EXPECT_NE(error_of(v).find("add_bos_token"), std::string::npos);
}

TEST(VocabErrors, DuplicateToken) {
  VocabData v = tiny_spm();
  v.tokens[5] = "a";
  const std::string err = error_of(v);
  EXPECT_NE(err.find("duplicate"), std::string::npos) << err;
}

TEST(VocabErrors, EmptyVocabulary) {
  VocabData v;
  v.model = "llama";
  EXPECT_FALSE(error_of(v).empty());
}

// read_vocab on GGUF files written here.
class ReadVocab : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tandem_tok_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static Value strings(const std::vector<std::string>& items) {
    Array a;
    a.type = ValueType::STRING;
    for (const auto& s : items) a.items.push_back(Value{s});
    return Value{a};
  }
  static Value floats(size_t n) {
    Array a;
    a.type = ValueType::FLOAT32;
    for (size_t i = 0; i < n; ++i) a.items.push_back(Value{float(-double(i))});
    return Value{a};
  }
  GgufWriter spm_writer() {
    GgufWriter w;
    w.set("general.name", Value{std::string("tiny")});
    w.set("tokenizer.ggml.model", Value{std::string("llama")});
    w.set("tokenizer.ggml.tokens", strings({"<unk>", "<s>", "</s>", "a"}));
    w.set("tokenizer.ggml.scores", floats(4));
    return w;
  }
  // Writes and reads back; returns the error message ("" on success).
  std::string read_error(const GgufWriter& w, VocabData* out = nullptr) {
    const std::string path = (dir_ / "vocab.gguf").string();
    Status s = w.write(path);
    if (!s.ok()) return "write failed: " + s.message();
    auto file = gguf::GgufFile::open(path);
    if (!file.ok()) return "open failed: " + file.status().message();
    auto data = Tokenizer::read_vocab(**file);
    if (!data.ok()) return data.status().message();
    if (out) *out = std::move(data).value();
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(ReadVocab, SpmDefaultsMatchLlamaCpp) {
  VocabData v;
  ASSERT_EQ(read_error(spm_writer(), &v), "");
  EXPECT_EQ(v.bos, 1);
  EXPECT_EQ(v.eos, 2);
  EXPECT_EQ(v.unk, 0);
  EXPECT_EQ(v.pad, -1);
  EXPECT_TRUE(v.add_bos);
  EXPECT_FALSE(v.add_eos);
  EXPECT_TRUE(v.add_space_prefix);
  EXPECT_EQ(v.model_name, "tiny");
  EXPECT_EQ(v.scores.size(), 4u);
}

TEST_F(ReadVocab, RealFilesReadBack) {
  auto file = gguf::GgufFile::open(vocab_path("llama-bpe"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto v = Tokenizer::read_vocab(**file);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->model, "gpt2");
  EXPECT_EQ(v->pre, "llama-bpe");
  EXPECT_EQ(v->tokens.size(), 128256u);
  EXPECT_EQ(v->merges.size(), 280147u);
  EXPECT_EQ(v->bos, 128000);
  EXPECT_EQ(v->eos, 128001);
  EXPECT_TRUE(v->add_bos);  // llama3 pre-tokenizer default
  EXPECT_FALSE(v->add_space_prefix);
}

TEST_F(ReadVocab, ScoresOfWrongLength) {
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.scores", floats(3));
  const std::string err = read_error(w);
  EXPECT_NE(err.find("vocab.gguf"), std::string::npos) << err;
  EXPECT_NE(err.find("tokenizer.ggml.scores"), std::string::npos) << err;
}

TEST_F(ReadVocab, ScoresOfWrongType) {
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.scores", strings({"x", "y", "z", "w"}));
  const std::string err = read_error(w);
  EXPECT_NE(err.find("tokenizer.ggml.scores"), std::string::npos) << err;
}

TEST_F(ReadVocab, TokenIdOutOfRange) {
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.eos_token_id", Value{uint32_t(4)});
  const std::string err = read_error(w);
  EXPECT_NE(err.find("tokenizer.ggml.eos_token_id"), std::string::npos) << err;
}

TEST_F(ReadVocab, FlagOfWrongType) {
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.add_bos_token", Value{uint32_t(1)});
  const std::string err = read_error(w);
  EXPECT_NE(err.find("tokenizer.ggml.add_bos_token"), std::string::npos) << err;
}

TEST_F(ReadVocab, MissingTokens) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", Value{std::string("llama")});
  const std::string err = read_error(w);
  EXPECT_NE(err.find("tokenizer.ggml.tokens"), std::string::npos) << err;
}

TEST_F(ReadVocab, UnsupportedModel) {
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.model", Value{std::string("rwkv")});
  const std::string err = read_error(w);
  EXPECT_NE(err.find("rwkv"), std::string::npos) << err;
  EXPECT_NE(err.find("tokenizer.ggml.model"), std::string::npos) << err;
}

TEST_F(ReadVocab, Gpt2NeedsMerges) {
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.model", Value{std::string("gpt2")});
  w.set("tokenizer.ggml.pre", Value{std::string("gpt-2")});
  const std::string err = read_error(w);
  EXPECT_NE(err.find("tokenizer.ggml.merges"), std::string::npos) << err;
}

}  // namespace
}  // namespace tandem::testing
