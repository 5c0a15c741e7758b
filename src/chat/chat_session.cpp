#include "chat/chat_session.h"

#include "model/tokenizer/tokenizer.h"

namespace tandem {
namespace {

nlohmann::ordered_json message(const std::string& role, const std::string& content) {
  return nlohmann::ordered_json{{"role", role}, {"content", content}};
}

}  // namespace

ChatSession::ChatSession(Session& session, ChatTemplate chat_template, ChatOptions options)
    : session_(session), template_(std::move(chat_template)), options_(std::move(options)) {
  reset();
}

void ChatSession::reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!options_.system.empty()) messages_.push_back(message("system", options_.system));
}

Result<TurnStats> ChatSession::send(const std::string& user_text,
                                    const std::function<bool(const std::string&)>& on_text) {
  TurnStats stats;
  messages_.push_back(message("user", user_text));
  const int context = session_.forward().context();
  std::vector<TokenId> prompt;
  while (true) {
    Conversation conv;
    conv.messages = messages_;
    Result<std::vector<TokenId>> ids = chat_prompt_tokens(template_, session_.model().tokenizer(), conv, options_.cancelled);
    if (!ids.ok()) {
      messages_.erase(messages_.end() - 1);
      return ids.status();
    }
    prompt = std::move(ids).value();
    if (int(prompt.size()) < context) break;
    // The turn does not fit. With a context shift, drop the oldest message after the system
    // message (keeping the new user message); otherwise say so and leave the conversation as it was.
    const size_t first = !messages_.empty() && messages_[0]["role"].get<std::string>() == "system" ? 1 : 0;
    if (!options_.context_shift || messages_.size() <= first + 1) {
      messages_.erase(messages_.end() - 1);
      return OutOfRange("chat: the conversation is " + std::to_string(prompt.size()) +
                        " tokens with this message, past the context of " + std::to_string(context) +
                        " tokens; /reset starts over, --context-shift drops the oldest turns, a larger -c makes room");
    }
    messages_.erase(messages_.begin() + long(first));
    ++stats.n_dropped_messages;
  }
  stats.n_prompt_tokens = int(prompt.size());
  std::vector<TokenId> reply;
  const Tokenizer& tok = session_.model().tokenizer();
  TANDEM_RETURN_IF_ERROR(session_.generate_reusing(
      prompt, options_.generate,
      [&](TokenId t) {
        reply.push_back(t);
        return !on_text || on_text(tok.token_to_piece(t, false));
      },
      &stats.generate));
  stats.reply = tok.decode(reply);
  messages_.push_back(message("assistant", stats.reply));
  return stats;
}

}  // namespace tandem
