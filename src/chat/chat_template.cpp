#include "chat/chat_template.h"

#include <exception>

#include "core/file_io.h"
#include "model/gguf/gguf.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem {
namespace {

constexpr size_t kMaxTemplateBytes = 1 << 20;       // real templates are under 30 KB

constexpr const char* kTemplateKey = "tokenizer.chat_template";

bool looks_like_path(const std::string& choice) {
  return choice.find('/') != std::string::npos ||
         (choice.size() > 6 && choice.compare(choice.size() - 6, 6, ".jinja") == 0);
}

// jinja::Template::render reports a raise_exception() and the template's own errors alike as
// kInvalidArgument (a limit is kOutOfRange, a cancel kInternal); its contract (template.h) spells a
// raise_exception() as "[line N: ]the template raised: MESSAGE". That one is the template refusing
// the conversation (the caller's input); every other failure is the template's or the
// interpreter's.
bool raised_by_template(const std::string& message) {
  size_t at = 0;
  if (message.compare(0, 5, "line ") == 0) {
    const size_t colon = message.find(": ");
    if (colon == std::string::npos) return false;
    at = colon + 2;
  }
  return message.compare(at, 20, "the template raised:") == 0;
}

std::string token_text(const Tokenizer& tokenizer, TokenId id) {
  const auto& tokens = tokenizer.vocab().tokens;
  return id >= 0 && size_t(id) < tokens.size() ? tokens[size_t(id)] : std::string();
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_source(const std::string& source, std::string origin, std::string bos_token,
                                               std::string eos_token) {
  Result<jinja::Template> t = jinja::Template::parse(source);
  if (!t.ok()) return InvalidArgument(origin + ": " + t.status().message());
  ChatTemplate c;
  c.template_ = std::move(t).value();
  c.origin_ = std::move(origin);
  c.source_ = source;
  c.bos_token_ = std::move(bos_token);
  c.eos_token_ = std::move(eos_token);
  return c;
}

Result<ChatTemplate> ChatTemplate::from_gguf(const gguf::GgufFile& file, const Tokenizer& tokenizer,
                                             const std::string& choice) {
  const std::string bos = token_text(tokenizer, tokenizer.bos()), eos = token_text(tokenizer, tokenizer.eos());
  if (looks_like_path(choice)) {
    TANDEM_ASSIGN_OR_RETURN(std::string source, read_regular_file(choice, kMaxTemplateBytes, "chat template"));
    return from_source(source, choice, bos, eos);
  }
  const std::string key = choice.empty() ? kTemplateKey : std::string(kTemplateKey) + "." + choice;
  if (!file.find(key)) {
    std::string named;
    for (const std::string& n : named_chat_templates(file)) named += (named.empty() ? "" : ", ") + n;
    if (choice.empty())
      return NotFound(file.path() + ": " + key +
                      ": missing (the file has no chat template); pass --template FILE.jinja");
    return NotFound(file.path() + ": " + key +
                    ": missing; named templates in the file: " + (named.empty() ? std::string("none") : named));
  }
  TANDEM_ASSIGN_OR_RETURN(std::string source, file.get_string(key));
  return from_source(source, file.path() + ": " + key, bos, eos);
}

Result<std::string> ChatTemplate::apply(const Conversation& conversation, bool add_generation_prompt,
                                        const std::function<bool()>& cancelled) const {
  try {
    jinja::Scope vars;
    vars["messages"] = jinja::Value::from_json(conversation.messages);
    vars["tools"] = conversation.tools.is_null() ? jinja::Value::none() : jinja::Value::from_json(conversation.tools);
    vars["documents"] = jinja::Value::none();
    vars["add_generation_prompt"] = jinja::Value(add_generation_prompt);
    if (!bos_token_.empty()) vars["bos_token"] = jinja::Value(bos_token_);
    if (!eos_token_.empty()) vars["eos_token"] = jinja::Value(eos_token_);
    Result<std::string> out = template_.render(vars, cancelled);
    if (out.ok()) return out;
    const std::string& m = out.status().message();
    return raised_by_template(m) ? InvalidArgument(origin_ + ": " + m) : Internal(origin_ + ": " + m);
  } catch (const std::exception& e) {
    // The interpreter promises a Status, but a model file's template is hostile input: whatever
    // escapes it (memory, a library's exception) fails this render, never the process.
    return Internal(origin_ + ": the render failed: " + e.what());
  }
}

Status ChatTemplate::check_renders() const {
  Conversation sample;
  sample.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Hello"}}});
  Result<std::string> out = apply(sample, /*add_generation_prompt=*/true);
  if (out.ok()) return Status::Ok();
  return {out.status().code(), out.status().message() +
                                   " (the start-up check: one user message and add_generation_prompt, which "
                                   "every chat template must render; --template FILE.jinja gives another)"};
}

Result<std::vector<TokenId>> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                                const Conversation& conversation,
                                                const std::function<bool()>& cancelled) {
  TANDEM_ASSIGN_OR_RETURN(std::string prompt,
                          chat_template.apply(conversation, /*add_generation_prompt=*/true, cancelled));
  return chat_text_tokens(chat_template, tokenizer, prompt);
}

std::vector<TokenId> chat_text_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                      const std::string& prompt) {
  const std::string& bos = chat_template.bos_token();
  const bool template_wrote_bos = !bos.empty() && prompt.compare(0, bos.size(), bos) == 0;
  std::vector<TokenId> ids = tokenizer.encode(prompt, /*add_special=*/!template_wrote_bos, /*parse_special=*/true);
  // add_special also appends EOS where the vocabulary asks for it: never at the end of a prompt
  // that opens the assistant's turn.
  if (!template_wrote_bos && tokenizer.vocab().add_eos && !ids.empty() && ids.back() == tokenizer.eos()) ids.pop_back();
  return ids;
}

std::vector<std::string> named_chat_templates(const gguf::GgufFile& file) {
  std::vector<std::string> names;
  const std::string prefix = std::string(kTemplateKey) + ".";
  for (const auto& [key, value] : file.metadata())
    if (key.compare(0, prefix.size(), prefix) == 0) names.push_back(key.substr(prefix.size()));
  return names;
}

}  // namespace tandem
