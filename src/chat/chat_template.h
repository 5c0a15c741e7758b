// A model's chat template: how a conversation (an OpenAI-style list of messages) becomes the
// prompt text the model was trained on. The template comes from the GGUF file
// (tokenizer.chat_template, or a named alternate tokenizer.chat_template.NAME) or from a .jinja
// file, and renders through tandem's Jinja interpreter with the variables Hugging Face gives it:
// messages, add_generation_prompt, bos_token, eos_token, tools and documents.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "chat/conversation.h"
#include "jinja/template.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem {

namespace gguf {
class GgufFile;
}

class ChatTemplate {
 public:
  // `choice`: "" for tokenizer.chat_template, a NAME for tokenizer.chat_template.NAME, or a path
  // to a .jinja file. Errors name the file and key, and list the named templates it has.
  static Result<ChatTemplate> from_gguf(const gguf::GgufFile& file, const Tokenizer& tokenizer,
                                        const std::string& choice);
  // A template from text; `origin` names it in errors.
  static Result<ChatTemplate> from_source(const std::string& source, std::string origin, std::string bos_token,
                                          std::string eos_token);

  // The prompt text. Errors start with origin() and the template's line, and say whose fault it is:
  //   kInvalidArgument  the template refused these messages (its own raise_exception)
  //   kInternal         anything else: a step or output budget, an unsupported construct, a
  //                     failure inside the interpreter, or `cancelled` answering true
  // `cancelled`, when given, is polled while the template runs (every few thousand steps): a
  // client that went away, a SIGTERM.
  Result<std::string> apply(const Conversation& conversation, bool add_generation_prompt,
                            const std::function<bool()>& cancelled = {}) const;

  // Renders a conversation every chat template must accept -- one user message, the assistant's
  // turn opened -- so a template that cannot render at all is found when a command starts, not
  // at its first message. The error is apply()'s, saying what was rendered.
  Status check_renders() const;

  const std::string& origin() const { return origin_; }  // "FILE.gguf: tokenizer.chat_template", a path, ...
  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  jinja::Template template_;
  std::string origin_, source_, bos_token_, eos_token_;
};

// The prompt tokens of a conversation, opening the assistant's turn: the template's text with its
// special tokens parsed, and BOS added only when the template did not write it (most templates
// write {{ bos_token }}; a second BOS degrades the output).
Result<std::vector<TokenId>> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                                const Conversation& conversation,
                                                const std::function<bool()>& cancelled = {});
// The second half of chat_prompt_tokens: the tokens of text the template rendered (tandem serve
// checks the text's size in between, before it spends time tokenizing).
std::vector<TokenId> chat_text_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                      const std::string& rendered);

// The named templates in a GGUF file ("tool_use", "rag", ...), for listings and errors.
std::vector<std::string> named_chat_templates(const gguf::GgufFile& file);

}  // namespace tandem
