#include "chat/chat_template.h"

#include "core/file_io.h"
#include "model/gguf/gguf.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem {
namespace {

constexpr size_t kMaxTemplateBytes = 1 << 20;       // real templates are under 30 KB
constexpr size_t kMaxConversationBytes = 64 << 20;  // a messages file

constexpr const char* kTemplateKey = "tokenizer.chat_template";

bool looks_like_path(const std::string& choice) {
  return choice.find('/') != std::string::npos ||
         (choice.size() > 6 && choice.compare(choice.size() - 6, 6, ".jinja") == 0);
}

// Messages nested deeper than this are refused: the template engine walks values recursively.
constexpr int kMaxJsonDepth = 64;

bool deeper_than(const nlohmann::ordered_json& j, int limit) {
  if (limit < 0) return true;
  if (!j.is_structured()) return false;
  for (const auto& e : j)
    if (deeper_than(e, limit - 1)) return true;
  return false;
}

std::string token_text(const Tokenizer& tokenizer, TokenId id) {
  const auto& tokens = tokenizer.vocab().tokens;
  return id >= 0 && size_t(id) < tokens.size() ? tokens[size_t(id)] : std::string();
}

}  // namespace

Result<Conversation> Conversation::from_json(const nlohmann::ordered_json& j, const std::string& origin) {
  Conversation c;
  if (deeper_than(j, kMaxJsonDepth)) return InvalidArgument(origin + ": nested past 64 levels");
  const nlohmann::ordered_json* messages = &j;
  if (j.is_object()) {
    if (!j.contains("messages")) return InvalidArgument(origin + ": an object needs a \"messages\" array");
    messages = &j["messages"];
    if (j.contains("tools") && !j["tools"].is_null()) {
      if (!j["tools"].is_array()) return InvalidArgument(origin + ": tools: must be an array");
      c.tools = j["tools"];
    }
  }
  if (!messages->is_array()) return InvalidArgument(origin + ": messages: must be an array of {role, content} objects");
  for (size_t i = 0; i < messages->size(); ++i) {
    const auto& m = (*messages)[i];
    const std::string where = origin + ": messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return InvalidArgument(where + ": must be an object with role and content");
    if (!m.contains("role") || !m["role"].is_string()) return InvalidArgument(where + ".role: missing or not a string");
    if (m.contains("content") && !m["content"].is_string() && !m["content"].is_null() && !m["content"].is_array())
      return InvalidArgument(where + ".content: must be a string, null or an array of parts");
  }
  c.messages = *messages;
  return c;
}

Result<Conversation> Conversation::from_file(const std::string& path) {
  TANDEM_ASSIGN_OR_RETURN(std::string text, read_regular_file(path, kMaxConversationBytes, "messages file"));
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(path + ": not valid JSON");
  return from_json(j, path);
}

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

Result<std::string> ChatTemplate::apply(const Conversation& conversation, bool add_generation_prompt) const {
  jinja::Scope vars;
  vars["messages"] = jinja::Value::from_json(conversation.messages);
  vars["tools"] = conversation.tools.is_null() ? jinja::Value::none() : jinja::Value::from_json(conversation.tools);
  vars["documents"] = jinja::Value::none();
  vars["add_generation_prompt"] = jinja::Value(add_generation_prompt);
  if (!bos_token_.empty()) vars["bos_token"] = jinja::Value(bos_token_);
  if (!eos_token_.empty()) vars["eos_token"] = jinja::Value(eos_token_);
  Result<std::string> out = template_.render(vars);
  if (!out.ok()) return InvalidArgument(origin_ + ": " + out.status().message());
  return out;
}

Result<std::vector<TokenId>> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                                const Conversation& conversation) {
  TANDEM_ASSIGN_OR_RETURN(std::string prompt, chat_template.apply(conversation, /*add_generation_prompt=*/true));
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
