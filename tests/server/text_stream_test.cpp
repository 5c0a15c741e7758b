// The streamed text: whole UTF-8 characters only, stop strings cut exactly (and never leaked a
// byte early, however the tokens split them), invalid bytes replaced rather than sent.
#include "server/text_stream.h"

#include <gtest/gtest.h>

namespace tandem::server {
namespace {

std::string feed(TextStream& s, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += s.push(p);
  return out;
}

TEST(TextStream, HoldsAnUnfinishedCharacterUntilItIsWhole) {
  TextStream s;
  // "é" (C3 A9) and "😀" (F0 9F 98 80) split across tokens.
  EXPECT_EQ(s.push("caf\xC3"), "caf");
  EXPECT_EQ(s.push("\xA9 "), "\xC3\xA9 ");
  EXPECT_EQ(s.push("\xF0\x9F"), "");
  EXPECT_EQ(s.push("\x98"), "");
  EXPECT_EQ(s.push("\x80!"), "\xF0\x9F\x98\x80!");
  EXPECT_EQ(s.finish(), "");
  EXPECT_EQ(s.text(), "caf\xC3\xA9 \xF0\x9F\x98\x80!");
}

TEST(TextStream, AnUnfinishedCharacterAtTheEndBecomesAReplacement) {
  TextStream s;
  EXPECT_EQ(s.push("ab\xE2\x82"), "ab");
  EXPECT_EQ(s.finish(), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(TextStream, InvalidBytesAreReplaced) {
  EXPECT_EQ(valid_utf8("a\xFFz"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(valid_utf8("ok \xE2\x82\xAC"), "ok \xE2\x82\xAC");
  EXPECT_EQ(unfinished_utf8_tail("ab\xF0\x9F\x98"), 3u);
  EXPECT_EQ(unfinished_utf8_tail("ab\xF0\x9F\x98\x80"), 0u);
}

TEST(TextStream, AStopStringSplitAcrossTokensEndsTheTextRightBeforeIt) {
  TextStream s({"END"});
  std::string out = feed(s, {"The st", "ory E", "N"});
  EXPECT_EQ(out, "The story ");  // "E", "EN" held: they may be the stop string
  EXPECT_FALSE(s.stopped());
  out += s.push("D and more");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(out, "The story ");
  EXPECT_EQ(s.push("after"), "");
  EXPECT_EQ(s.finish(), "");
}

TEST(TextStream, HeldTextThatTurnsOutNotToBeAStopIsSent) {
  TextStream s({"</s>", "###"});
  EXPECT_EQ(s.push("a <"), "a ");
  EXPECT_EQ(s.push("/b"), "</b");
  EXPECT_EQ(s.push("##"), "");
  EXPECT_EQ(s.finish(), "##");  // the end: what was held leaves
}

TEST(TextStream, TheEarliestOfSeveralStopsWins) {
  TextStream s({"world", "lo"});
  EXPECT_EQ(feed(s, {"hello world"}), "hel");
  EXPECT_TRUE(s.stopped());
}

TEST(TextStream, EmptyStopStringsAreIgnored) {
  TextStream s({"", "x"});
  EXPECT_EQ(s.push("abc"), "abc");
}

}  // namespace
}  // namespace tandem::server
