// Conversations over one session: a turn evaluates only what the cache does not hold, and what it
// generates is what a fresh session generates for the same whole conversation (so the reuse
// cannot change an answer); a message past the context is refused without changing the
// conversation, or makes room by dropping the oldest turns with --context-shift.
#include "chat/chat_session.h"

#include <gtest/gtest.h>

#include "model/model.h"

namespace tandem {
namespace {

const std::string kModel = std::string(TANDEM_SHARED_DIR) + "/testdata/models/stories260K.gguf";
const std::string kTemplate = std::string(TANDEM_SOURCE_DIR) + "/tests/chat/data/compact.jinja";

struct Fixture {
  std::shared_ptr<Model> model;
  std::unique_ptr<Session> session;
  ChatTemplate chat_template;
};

Fixture make() {
  Fixture f;
  auto model = Model::load(kModel);
  EXPECT_TRUE(model.ok()) << model.status().message();
  f.model = std::move(model).value();
  auto session = Session::create(f.model, {2, 0, 512});
  EXPECT_TRUE(session.ok());
  f.session = std::move(session).value();
  auto t = ChatTemplate::from_gguf(f.model->file(), f.model->tokenizer(), kTemplate);
  EXPECT_TRUE(t.ok()) << t.status().message();
  f.chat_template = std::move(t).value();
  return f;
}

ChatOptions greedy(int n_predict, bool context_shift = false) {
  ChatOptions o;
  o.system = "Tell a story.";
  o.generate.n_predict = n_predict;
  o.generate.stop_at_eog = false;
  o.generate.sampler = SamplerOptions::greedy();
  o.context_shift = context_shift;
  return o;
}

TEST(ChatSession, ASecondTurnReusesTheCacheAndAnswersAsAFreshSession) {
  Fixture f = make();
  ChatSession chat(*f.session, f.chat_template, greedy(6));
  auto first = chat.send("Once", nullptr);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->generate.n_reused, 0);
  std::string streamed;
  auto second = chat.send("A cat", [&](const std::string& piece) {
    streamed += piece;
    return true;
  });
  ASSERT_TRUE(second.ok()) << second.status().message();
  // Everything up to the first reply is in the cache: the first turn's whole prompt at least.
  EXPECT_GE(second->generate.n_reused, first->n_prompt_tokens);
  EXPECT_LT(second->generate.n_reused, second->n_prompt_tokens);
  EXPECT_EQ(chat.messages().size(), 5u);  // system, user, assistant, user, assistant

  // The same conversation from an empty cache gives the same reply.
  Conversation conv;
  conv.messages = chat.messages();
  conv.messages.erase(conv.messages.end() - 1);
  auto prompt = chat_prompt_tokens(f.chat_template, f.model->tokenizer(), conv);
  ASSERT_TRUE(prompt.ok());
  EXPECT_EQ(int(prompt->size()), second->n_prompt_tokens);
  auto fresh = Session::create(f.model, {2, 0, 512});
  ASSERT_TRUE(fresh.ok());
  std::vector<TokenId> ids;
  GenerateOptions g = greedy(6).generate;
  ASSERT_TRUE((*fresh)
                  ->generate(*prompt, g,
                             [&](TokenId t) {
                               ids.push_back(t);
                               return true;
                             })
                  .ok());
  EXPECT_EQ(f.model->tokenizer().decode(ids), second->reply);
  std::string pieces;
  for (TokenId t : ids) pieces += f.model->tokenizer().token_to_piece(t, false);
  EXPECT_EQ(streamed, pieces);
}

TEST(ChatSession, AMessagePastTheContextIsRefusedAndChangesNothing) {
  Fixture f = make();
  ChatSession chat(*f.session, f.chat_template, greedy(4));
  ASSERT_TRUE(chat.send("Once", nullptr).ok());
  const auto before = chat.messages();
  auto r = chat.send(std::string(400, 'a'), nullptr);  // far more than stories260K's 128 tokens
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("context of 128 tokens"), std::string::npos) << r.status().message();
  EXPECT_EQ(chat.messages(), before);
  EXPECT_TRUE(chat.send("Then", nullptr).ok());  // the session goes on
}

TEST(ChatSession, ContextShiftDropsTheOldestTurnsAndKeepsTheSystemMessage) {
  Fixture f = make();
  ChatSession chat(*f.session, f.chat_template, greedy(8, /*context_shift=*/true));
  int dropped = 0;
  for (int turn = 0; turn < 8; ++turn) {
    auto r = chat.send("The little dog ran to the park", nullptr);
    ASSERT_TRUE(r.ok()) << "turn " << turn << ": " << r.status().message();
    dropped += r->n_dropped_messages;
    EXPECT_LT(r->n_prompt_tokens, 128);
  }
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(chat.messages()[0]["role"], "system");
  EXPECT_EQ(chat.messages()[0]["content"], "Tell a story.");
}

TEST(ChatSession, ResetKeepsOnlyTheSystemMessage) {
  Fixture f = make();
  ChatSession chat(*f.session, f.chat_template, greedy(2));
  ASSERT_TRUE(chat.send("Once", nullptr).ok());
  chat.reset();
  ASSERT_EQ(chat.messages().size(), 1u);
  EXPECT_EQ(chat.messages()[0]["role"], "system");
}

}  // namespace
}  // namespace tandem
