// A conversation as OpenAI's API and chat templates see it: a list of {role, content} messages
// and, optionally, the tools the model may call. Read from JSON (a request body, a messages
// file) with checks that name the offending field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace tandem {

// A conversation as the template sees it.
struct Conversation {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null when none (the template sees None)

  // Reads `[{"role": ..., "content": ...}, ...]` or `{"messages": [...], "tools": [...]}`.
  // Errors name `origin` and the offending field (messages[2].role).
  static Result<Conversation> from_json(const nlohmann::ordered_json& j, const std::string& origin);
  static Result<Conversation> from_file(const std::string& path);
};

}  // namespace tandem
