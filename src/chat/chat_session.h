// A conversation with a model: the messages so far, rendered through the model's chat template
// for each turn, over one Session whose KV cache carries from turn to turn, so a turn evaluates
// only what the previous one did not (the new user message and the template's markup).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "runtime/session.h"

namespace tandem {

struct ChatOptions {
  std::string system;  // a system message first, when not empty
  GenerateOptions generate;
  // When a turn no longer fits the context: drop the oldest turns (the system message stays)
  // and render again; otherwise the turn is refused with a message that says so.
  bool context_shift = false;
  // Polled while the template renders a turn (tandem chat: Ctrl-C); a render it stops fails the turn.
  std::function<bool()> cancelled;
};

struct TurnStats {
  GenerateStats generate;
  int n_prompt_tokens = 0;     // the whole rendered conversation, in tokens
  int n_dropped_messages = 0;  // messages the context shift dropped this turn
  std::string reply;           // the assistant's text
};

class ChatSession {
 public:
  ChatSession(Session& session, ChatTemplate chat_template, ChatOptions options);

  // Adds the user's message and generates the reply, calling on_text with each piece as it
  // comes (return false to stop, as Ctrl-C does). The reply joins the conversation.
  Result<TurnStats> send(const std::string& user_text, const std::function<bool(const std::string&)>& on_text);

  // Back to the system message alone. The KV cache keeps what the next turn can reuse.
  void reset();

  const nlohmann::ordered_json& messages() const { return messages_; }

 private:
  Session& session_;
  ChatTemplate template_;
  ChatOptions options_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace tandem
