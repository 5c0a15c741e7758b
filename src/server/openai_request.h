// The body of a POST /v1/chat/completions or /v1/completions, read and checked field by field
// as the OpenAI API defines them. Anything wrong comes back as the ApiError OpenAI would send
// (the field in `param`); fields tandem cannot honour (logprobs, n > 1, penalties it does not
// implement, ...) are refused rather than silently ignored; fields that only label a request
// (user, metadata, store) are accepted and ignored.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/conversation.h"
#include "runtime/sampler.h"
#include "server/openai_error.h"

namespace tandem::server {

// What a request is checked against.
struct ServedModel {
  std::string id;           // what /v1/models lists and "model" must name
  SamplerOptions sampling;  // the server's defaults (tandem serve's sampling options)
  bool random_seed = true;  // a request without "seed" draws one (else sampling.seed)
};

struct GenerationRequest {
  bool chat = true;
  Conversation conversation;        // chat: messages (and tools, for the template)
  std::string prompt;               // completions: the prompt text...
  std::vector<TokenId> prompt_ids;  // ...or its token ids
  bool prompt_is_ids = false;
  bool echo = false;  // completions: the prompt leads the returned text
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int max_tokens = 0;          // 0: until the end of the turn or of the context
  SamplerOptions sampler;
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

// Most JSON nesting a request may have (a deeper one is refused before it is parsed).
inline constexpr int kMaxRequestDepth = 64;

// Most messages a chat request may hold, refused while the body is parsed, before the conversation
// is copied for the template and rendered. Every template spends tokens on each message's markup,
// so thousands of messages only fit contexts of 100k tokens and more; a conversation that long is
// summarized or cut by its client long before. Past it, the work of one request (an 8 MiB body of
// 200,000 empty messages: ~0.8 s of copies, a render, a tokenization, ~1 GB of memory) only ever
// ended in a context error.
inline constexpr size_t kMaxMessages = 4096;
// Most keys one JSON object of a request may have, and the most key comparisons all its objects
// may cost together: the parser keeps each object's keys in order (ordered_json, so a tool's schema
// reaches the template as the client wrote it) and looks each new key up among the earlier ones,
// so an object of k keys costs k^2/2 comparisons -- an 870 KB object of 80,000 keys took 38 s.
// Both are counted while the body is parsed. Real requests stay far below (a 300-entry logit_bias:
// 45,000 comparisons; 128 tools of 30 properties: 60,000).
inline constexpr size_t kMaxObjectKeys = 1024;
inline constexpr size_t kMaxKeyComparisons = size_t(1) << 24;
// Most tools a chat request may declare: OpenAI's own limit (each is a JSON schema the template
// writes into the prompt).
inline constexpr size_t kMaxTools = 128;

std::optional<ApiError> parse_chat_request(const std::string& body, const ServedModel& served, GenerationRequest& out);
std::optional<ApiError> parse_completion_request(const std::string& body, const ServedModel& served,
                                                 GenerationRequest& out);

}  // namespace tandem::server
