#include "server/openai_response.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

namespace tandem::server {
namespace {

using nlohmann::ordered_json;

std::string random_id(const char* prefix) {
  // Unique per process and unpredictable across runs: a counter beside a random draw.
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix, static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter.fetch_add(1) & 0xffffffffull));
  return buf;
}

const char* object_name(const ResponseHead& h, bool chunk) {
  if (h.chat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

ordered_json head_json(const ResponseHead& h, bool chunk) {
  return {{"id", h.id},
          {"object", object_name(h, chunk)},
          {"created", h.created},
          {"model", h.model},
          {"system_fingerprint", "tandem"}};
}

ordered_json reason_json(FinishReason r) {
  if (r == FinishReason::kNone) return nullptr;
  return finish_reason_name(r);
}

}  // namespace

ResponseHead new_response_head(bool chat, const std::string& model) {
  ResponseHead h;
  h.chat = chat;
  h.id = random_id(chat ? "chatcmpl-" : "cmpl-");
  h.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.model = model;
  return h;
}

ordered_json usage_json(const JobStats& s) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens},
          {"total_tokens", s.prompt_tokens + s.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", s.reused_tokens}}}};
}

ordered_json completion_json(const ResponseHead& h, const std::string& text, FinishReason reason,
                             const JobStats& stats) {
  ordered_json j = head_json(h, false);
  ordered_json choice = {{"index", 0}};
  if (h.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = reason_json(reason);
  j["choices"] = ordered_json::array({choice});
  j["usage"] = usage_json(stats);
  return j;
}

ordered_json chunk_json(const ResponseHead& h, const std::string& text, bool first, FinishReason reason) {
  ordered_json j = head_json(h, true);
  ordered_json choice = {{"index", 0}};
  if (h.chat) {
    ordered_json delta = ordered_json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && reason == FinishReason::kNone)) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = reason_json(reason);
  j["choices"] = ordered_json::array({choice});
  return j;
}

ordered_json usage_chunk_json(const ResponseHead& h, const JobStats& stats) {
  ordered_json j = head_json(h, true);
  j["choices"] = ordered_json::array();
  j["usage"] = usage_json(stats);
  return j;
}

std::string sse_event(const ordered_json& j) { return "data: " + json_text(j) + "\n\n"; }

ordered_json models_json(const std::string& id, int64_t created, int context) {
  ordered_json m = {
      {"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "tandem"}, {"meta", {{"n_ctx", context}}}};
  return {{"object", "list"}, {"data", ordered_json::array({m})}};
}

}  // namespace tandem::server
