// The llama.cpp-dialect -> PCRE2 rewrite and the splitter's handling of gaps and empty matches.
#include "model/tokenizer/regex_splitter.h"

#include <gtest/gtest.h>

#include "model/tokenizer/pretokenizer.h"

namespace tandem::tokenizer {
namespace {

std::vector<std::string> split(const std::vector<std::string>& patterns, std::string_view text) {
  auto splitter = RegexSplitter::compile(patterns);
  EXPECT_TRUE(splitter.ok()) << splitter.status().message();
  std::vector<std::string> words;
  if (splitter.ok()) splitter->split(text, /*byte_encode=*/false, words);
  return words;
}

using Words = std::vector<std::string>;

TEST(RegexSplitter, UnmatchedTextBecomesItsOwnPiece) {
  EXPECT_EQ(split({"[0-9]+"}, "ab12cd345"), (Words{"ab", "12", "cd", "345"}));
}

TEST(RegexSplitter, LaterRegexesSplitEarlierPieces) {
  EXPECT_EQ(split({"[a-z]+", "[a-c]"}, "abcxyz"), (Words{"a", "b", "c", "xyz"}));
}

TEST(RegexSplitter, EmptyMatchesOnlyCut) {
  // superbpe's digit grouping: a lookahead that matches the empty string before groups of 3.
  EXPECT_EQ(split({R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}, "1234567"),
            (Words{"1", "234", "567"}));
}

TEST(RegexSplitter, DollarIsEndOfTextOnly) {
  EXPECT_EQ(split({R"(\s+$)"}, "a \n"), (Words{"a", " \n"}));
}

TEST(RegexSplitter, WhitespaceIsUnicodeWhiteSpace) {
  // U+3000 IDEOGRAPHIC SPACE is whitespace; U+180E MONGOLIAN VOWEL SEPARATOR is not.
  EXPECT_EQ(split({R"(\s+)"}, "a\xE3\x80\x80" "b"), (Words{"a", "\xE3\x80\x80", "b"}));
  EXPECT_EQ(split({R"(\s+)"}, "a\xE1\xA0\x8E" "b"), (Words{"a\xE1\xA0\x8E" "b"}));
}

TEST(RegexSplitter, TildeIsNotASymbolLikeInLlamaCpp) {
  EXPECT_EQ(split({R"([\p{S}]+)"}, "+~+"), (Words{"+", "~", "+"}));
  EXPECT_EQ(split({R"([^\p{L}\p{S}]+)"}, "a~b"), (Words{"a", "~", "b"}));
}

TEST(RegexSplitter, DigitsAreAscii) {
  // U+0663 ARABIC-INDIC DIGIT THREE is \p{N} but not \d.
  EXPECT_EQ(split({R"(\d+)"}, "12\xD9\xA3"), (Words{"12", "\xD9\xA3"}));
  EXPECT_EQ(split({R"(\p{N}+)"}, "12\xD9\xA3"), (Words{"12\xD9\xA3"}));
}

TEST(RegexSplitter, MalformedUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(split({R"(\p{L}+)"}, "ab\xFF"), (Words{"ab", "\xEF\xBF\xBD"}));
}

TEST(RegexSplitter, ByteEncodingUsesGpt2StandIns) {
  auto splitter = RegexSplitter::compile({R"( ?\p{L}+)"});
  ASSERT_TRUE(splitter.ok());
  std::vector<std::string> words;
  splitter->split(" hi\n", /*byte_encode=*/true, words);
  EXPECT_EQ(words, (Words{"\xC4\xA0hi", "\xC4\x8A"}));  // Ġhi, Ċ
}

TEST(PreTokenizerTable, EveryEntryCompiles) {
  const std::string names = supported_pre_tokenizers();
  size_t start = 0;
  int count = 0;
  while (start < names.size()) {
    size_t end = names.find(", ", start);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(start, end - start);
    const PreTokenizerSpec* spec = find_pre_tokenizer(name);
    ASSERT_NE(spec, nullptr) << name;
    auto splitter = RegexSplitter::compile(spec->regexes);
    EXPECT_TRUE(splitter.ok()) << name << ": " << splitter.status().message();
    if (splitter.ok()) {
      std::vector<std::string> words;
      splitter->split("Hello, y'all! 12345 \xE6\x88\x91\xE6\x83\xB3 ~~ \n\n x", true, words);
      EXPECT_FALSE(words.empty()) << name;
    }
    ++count;
    start = end + 2;
  }
  EXPECT_GT(count, 60);
  EXPECT_NE(find_pre_tokenizer(""), nullptr);  // "" means default
  EXPECT_EQ(find_pre_tokenizer("kimi-k2"), nullptr);
}

}  // namespace
}  // namespace tandem::tokenizer
