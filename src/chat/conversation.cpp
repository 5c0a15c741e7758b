#include "chat/conversation.h"

#include "core/file_io.h"

namespace tandem {
namespace {

constexpr size_t kMaxConversationBytes = 64 << 20;  // a messages file

// Messages nested deeper than this are refused: the template engine walks values recursively.
constexpr int kMaxJsonDepth = 64;

bool deeper_than(const nlohmann::ordered_json& j, int limit) {
  if (limit < 0) return true;
  if (!j.is_structured()) return false;
  for (const auto& e : j)
    if (deeper_than(e, limit - 1)) return true;
  return false;
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

}  // namespace tandem
