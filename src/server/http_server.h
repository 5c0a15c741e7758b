// tandem serve's HTTP side: the OpenAI-compatible endpoints over cpp-httplib (behind the
// connection gate, gated_http.h), each generation request turned into a CompletionJob for the
// SlotEngine and its answer sent whole or streamed as Server-Sent Events.
//
//   POST /v1/chat/completions   messages through the model's chat template
//   POST /v1/completions        a raw prompt (text or token ids)
//   GET  /v1/models             the one model served (and /v1/models/{id})
//   GET  /health                {"status": "ok", slots...}; never needs the key
//   GET  /metrics               Prometheus text
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "core/status.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/slot_engine.h"

namespace tandem::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;       // 0: any free port (bind() says which)
  std::string api_key;   // required as "Authorization: Bearer KEY" when not empty
  int http_threads = 0;  // requests served at once (idle connections hold no thread); 0: 4 per slot + 16
  size_t max_body_bytes = size_t(8) << 20;
};

class OpenAiServer {
 public:
  // chat_template: none for a model without one (chat requests are then refused; completions work).
  OpenAiServer(SlotEngine& engine, std::optional<ChatTemplate> chat_template, ServedModel served,
               ServerOptions options);
  ~OpenAiServer();

  Result<int> bind();  // the port it listens on
  Status listen();     // serves until stop()
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::server
