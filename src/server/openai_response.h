// The response objects of the OpenAI API that tandem serve sends: whole completions, the chunks
// of a stream (Server-Sent Events), usage, and the model list.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "server/completion_job.h"
#include "server/openai_error.h"

namespace tandem::server {

// What every object of one response repeats.
struct ResponseHead {
  std::string id;       // chatcmpl-... / cmpl-...
  int64_t created = 0;  // Unix seconds
  std::string model;
  bool chat = true;
};

ResponseHead new_response_head(bool chat, const std::string& model);

nlohmann::ordered_json usage_json(const JobStats& stats);

// A whole (non-streamed) completion.
nlohmann::ordered_json completion_json(const ResponseHead& head, const std::string& text, FinishReason reason,
                                       const JobStats& stats);

// One chunk of a stream: text (chat: a delta; the first chunk also carries the role), or the
// finish reason (text empty), or, with usage requested, the last chunk of usage and no choices.
nlohmann::ordered_json chunk_json(const ResponseHead& head, const std::string& text, bool first,
                                  FinishReason reason = FinishReason::kNone);
nlohmann::ordered_json usage_chunk_json(const ResponseHead& head, const JobStats& stats);

// "data: JSON\n\n", as Server-Sent Events frame a message.
std::string sse_event(const nlohmann::ordered_json& j);

nlohmann::ordered_json models_json(const std::string& id, int64_t created, int context);

}  // namespace tandem::server
