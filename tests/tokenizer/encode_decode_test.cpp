// Behaviour on the real vocabularies beyond the conformance cases: round trips, special tokens,
// BOS/EOS, pieces, speed.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "test_vocabs.h"

namespace tandem::testing {
namespace {

class EachVocab : public ::testing::TestWithParam<std::string> {
 protected:
  const Tokenizer* tok() {
    const Tokenizer* t = load_vocab(GetParam());
    EXPECT_NE(t, nullptr);
    return t;
  }
};

TEST_P(EachVocab, DecodeInvertsEncode) {
  const Tokenizer* t = tok();
  ASSERT_NE(t, nullptr);
  const std::vector<std::string> texts = {
      "Hello world",
      "The quick brown fox jumps over the lazy dog. 1234567890",
      "  leading and trailing spaces  ",
      "tabs\tand\nnewlines\n\n",
      "Gr\xC3\xBC\xC3\x9F" "e aus K\xC3\xB6ln, na\xC3\xAFve caf\xC3\xA9",       // German/French
      "\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",  // Russian
      "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8" "apple\xE5\xB7\xA5\xE4\xBD\x9C",      // Chinese
      "\xF0\x9F\xA6\x99\xF0\x9F\x9A\x80 \xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F",  // emoji
  };
  for (const std::string& text : texts) {
    const std::vector<TokenId> ids = t->encode(text, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_FALSE(ids.empty()) << text;
    EXPECT_EQ(t->decode(ids), text) << GetParam() << ": '" << text << "'";
  }
}

TEST_P(EachVocab, EmptyTextGivesNoTokens) {
  const Tokenizer* t = tok();
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->encode("", false, false).empty());
  EXPECT_TRUE(t->encode("", false, true).empty());
}

TEST_P(EachVocab, MalformedUtf8DoesNotBreakEncoding) {
  const Tokenizer* t = tok();
  ASSERT_NE(t, nullptr);
  const std::string text = "ok \xFF\xFE\xC3 bytes \xE2\x82";
  const std::vector<TokenId> ids = t->encode(text, false, false);
  EXPECT_FALSE(ids.empty());
  for (TokenId id : ids) EXPECT_TRUE(id >= 0 && id < t->n_vocab());
}

// Arbitrary bytes (including pieces of special-token spellings) never yield an invalid id.
TEST_P(EachVocab, RandomBytesGiveValidIds) {
  const Tokenizer* t = tok();
  ASSERT_NE(t, nullptr);
  std::mt19937 rng(1234);
  const std::string alphabet = "<|>/s_ \n\t\r'aZ0~\xE2\x96\x81\xC3\xA9\xF0\x9F\xA6\x99";
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const int length = int(rng() % 64);
    for (int i = 0; i < length; ++i) {
      text += (rng() % 3 == 0) ? char(rng() & 0xFF) : alphabet[rng() % alphabet.size()];
    }
    for (bool parse_special : {false, true}) {
      for (TokenId id : t->encode(text, true, parse_special)) {
        ASSERT_TRUE(id >= 0 && id < t->n_vocab()) << GetParam() << " round " << round;
      }
    }
  }
}

// One enormous "word" and one enormous run of spaces stay fast.
TEST_P(EachVocab, LongRunsAreFast) {
  const Tokenizer* t = tok();
  ASSERT_NE(t, nullptr);
  for (const std::string& text : {std::string(20000, 'a'), std::string(20000, ' '),
                                  std::string(5000, '3')}) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<TokenId> ids = t->encode(text, false, false);
    [[maybe_unused]] const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(t->decode(ids), text);
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
    EXPECT_LT(ms, 500.0) << GetParam();
#endif
  }
}

TEST_P(EachVocab, AddSpecialFollowsTheFlags) {
  const Tokenizer* t = tok();
  ASSERT_NE(t, nullptr);
  const std::vector<TokenId> plain = t->encode("Hello", false, false);
  std::vector<TokenId> expected;
  if (t->vocab().add_bos) expected.push_back(t->bos());
  expected.insert(expected.end(), plain.begin(), plain.end());
  if (t->vocab().add_eos) expected.push_back(t->eos());
  EXPECT_EQ(t->encode("Hello", true, false), expected);
}

// A 10 KB text must tokenize in well under 100 ms.
TEST_P(EachVocab, TenKilobytesIsFast) {
  const Tokenizer* t = tok();
  ASSERT_NE(t, nullptr);
  std::string text;
  const std::string paragraph =
      "In 2024, the model processed 1,234 requests per second; latency stayed below 15 ms. "
      "Caf\xC3\xA9 \xE6\x88\x91\xE6\x83\xB3 \xF0\x9F\xA6\x99 -- don't panic!\n";
  while (text.size() < 10 * 1024) text += paragraph;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<TokenId> ids = t->encode(text, true, true);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(ids.size(), 1000u);
  std::printf("[ timing ] %s: %zu bytes -> %zu tokens in %.2f ms\n", GetParam().c_str(),
              text.size(), ids.size(), ms);
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(ms, 100.0);
#endif
}

INSTANTIATE_TEST_SUITE_P(VocabFiles, EachVocab, ::testing::ValuesIn(conformance_vocabs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;
                           for (char& c : id) {
                             if (c == '-') c = '_';
                           }
                           return id;
                         });

TEST(SpecialTokens, Llama3ControlTokenParsedOnlyWhenAsked) {
  const Tokenizer* t = load_vocab("llama-bpe");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->encode("<|begin_of_text|>", false, true), std::vector<TokenId>{128000});
  const std::vector<TokenId> literal = t->encode("<|begin_of_text|>", false, false);
  EXPECT_GT(literal.size(), 1u);
  for (TokenId id : literal) EXPECT_LT(id, 128000);
  // Text around the token is tokenized as usual.
  std::vector<TokenId> expected = {128006};
  for (TokenId id : t->encode("user", false, false)) expected.push_back(id);
  expected.push_back(128007);
  EXPECT_EQ(t->encode("<|start_header_id|>user<|end_header_id|>", false, true), expected);
}

TEST(SpecialTokens, Llama3AddsBosAndRecognisesEndOfGeneration) {
  const Tokenizer* t = load_vocab("llama-bpe");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->vocab().add_bos);
  EXPECT_EQ(t->encode("Hi", true, false).front(), 128000);
  EXPECT_TRUE(t->is_eog(128001));  // <|end_of_text|>
  EXPECT_TRUE(t->is_eog(128009));  // <|eot_id|>
  EXPECT_EQ(t->vocab().eot, 128009);
  EXPECT_FALSE(t->is_eog(128000));
  EXPECT_EQ(t->token_to_piece(128009, false), "");
  EXPECT_EQ(t->token_to_piece(128009, true), "<|eot_id|>");
}

TEST(SpecialTokens, QwenChatMarkup) {
  const Tokenizer* t = load_vocab("qwen2");
  ASSERT_NE(t, nullptr);
  const std::vector<TokenId> ids = t->encode("<|im_start|>user\nHi<|im_end|>", false, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids.back(), 151645);
  EXPECT_TRUE(t->is_eog(151645));
  EXPECT_FALSE(t->vocab().add_bos);
  EXPECT_EQ(t->decode(ids, /*render_special=*/true), "<|im_start|>user\nHi<|im_end|>");
  EXPECT_EQ(t->decode(ids, /*render_special=*/false), "user\nHi");
}

TEST(SpecialTokens, SentencePiecePrefixesSpaceAfterSpecialToken) {
  const Tokenizer* t = load_vocab("llama-spm");
  ASSERT_NE(t, nullptr);
  std::vector<TokenId> expected = {1};
  for (TokenId id : t->encode("Hello", false, false)) expected.push_back(id);
  EXPECT_EQ(t->encode("<s>Hello", false, true), expected);
  EXPECT_EQ(t->encode("Hello", true, false), expected);
  EXPECT_NE(t->encode("<s>Hello", false, false), expected);  // control token stays text
}

TEST(SpecialTokens, Phi3StripsWhitespaceAfterItsSpecialTokens) {
  const Tokenizer* t = load_vocab("phi-3");
  ASSERT_NE(t, nullptr);
  std::vector<TokenId> expected = {32010};  // <|user|>
  for (TokenId id : t->encode("Hi", false, false)) expected.push_back(id);
  EXPECT_EQ(t->encode("<|user|>\n  Hi", false, true), expected);
  EXPECT_TRUE(t->is_eog(32007));  // <|end|>
}

TEST(Pieces, SentencePieceBytesAndSpaces) {
  const Tokenizer* t = load_vocab("llama-spm");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->token_to_piece(13, false), "\n");  // <0x0A>
  EXPECT_EQ(t->token_to_piece(1, false), "");     // <s> is control
  EXPECT_EQ(t->token_to_piece(1, true), "<s>");
  const std::vector<TokenId> ids = t->encode("Hello world", false, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(t->token_to_piece(ids[0], false), " Hello");
  EXPECT_EQ(t->token_to_piece(ids[1], false), " world");
}

TEST(Pieces, ByteLevelBpeMapsBack) {
  const Tokenizer* t = load_vocab("gpt-2");
  ASSERT_NE(t, nullptr);
  const std::vector<TokenId> ids = t->encode(" Hello", false, false);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(t->token_to_piece(ids[0], false), " Hello");
  EXPECT_EQ(t->token_to_piece(50256, true), "<|endoftext|>");
  EXPECT_EQ(t->token_to_piece(50256, false), "");
}

// Ids a user gives (run --prompt-ids, a server prompt array) are checked against the vocabulary
// before anything decodes or embeds them; the error names where they came from.
TEST(Ids, OutsideTheVocabularyAreNamedWithItsSize) {
  const Tokenizer* t = load_vocab("llama-spm");
  ASSERT_NE(t, nullptr);
  const std::vector<TokenId> good = {0, 1, 31999};
  EXPECT_TRUE(t->check_ids(good, "--prompt-ids").ok());
  const std::vector<TokenId> past = {1, 32000, 5};
  EXPECT_EQ(t->check_ids(past, "--prompt-ids").message(),
            "--prompt-ids: 32000 is outside the vocabulary of 32000 tokens (0..31999)");
  const std::vector<TokenId> negative = {-1};
  EXPECT_EQ(t->check_ids(negative, "prompt").message(), "prompt: -1 is outside the vocabulary of 32000 tokens (0..31999)");
}

}  // namespace
}  // namespace tandem::testing
