#include "server/http_server.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <random>

#include "core/interrupt.h"
#include "server/gated_http.h"
#include "server/openai_response.h"
#include "server/peer_watch.h"
#include "server/text_stream.h"

namespace tandem::server {
namespace {

using nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(50);
// A stream silent this long gets an SSE comment line: a write is how a closed connection shows
// where the peer watch cannot see it.
constexpr auto kKeepAliveInterval = std::chrono::seconds(5);

void send_json(httplib::Response& res, int status, const ordered_json& j) {
  res.status = status;
  res.set_content(json_text(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.http_status, e.to_json()); }

ApiError server_error(int status, std::string message, std::string type, std::string code = "") {
  ApiError e;
  e.http_status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.code = std::move(code);
  return e;
}

// Compares without an early exit, so the time taken does not tell how much of a key was right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % std::max<size_t>(b.size(), 1)]);
  return diff == 0;
}

// Where the job ended in an error, the status and error object the client gets.
ApiError job_error(const CompletionJob& job) {
  if (job.reason() == FinishReason::kCancelled)
    return server_error(503, "The server is shutting down: " + job.error().message(), "server_error",
                        "server_shutting_down");
  return server_error(500, "The generation failed: " + job.error().message(), "server_error", "generation_failed");
}

// The longest text of one token: no token covers more of a prompt than this many bytes, so a
// prompt of B bytes is at least B / this many tokens (the size check before tokenizing).
size_t longest_token_bytes(const Tokenizer& tok) {
  size_t n = 1;
  for (const std::string& t : tok.vocab().tokens) n = std::max(n, t.size());
  return n;
}

// Counts a request as being prepared (parsed, rendered, tokenized) while it lives: /health and
// /metrics show the work that holds no slot yet.
class Preparing {
 public:
  explicit Preparing(std::atomic<int>& n) : n_(n) { ++n_; }
  ~Preparing() { --n_; }
  Preparing(const Preparing&) = delete;
  Preparing& operator=(const Preparing&) = delete;

 private:
  std::atomic<int>& n_;
};

// Each request holds a worker thread while it is prepared, waits for a slot or streams: room for
// every slot's client and the queue behind them. (A connection waiting for its request holds none.)
int worker_threads(const ServerOptions& o, const SlotEngine& engine) {
  return o.http_threads > 0 ? o.http_threads : 4 * engine.slots() + 16;
}

}  // namespace

struct OpenAiServer::Impl {
  Impl(SlotEngine& e, std::optional<ChatTemplate> t, ServedModel s, ServerOptions o)
      : engine(e),
        chat_template(std::move(t)),
        served(std::move(s)),
        options(std::move(o)),
        token_bytes(longest_token_bytes(e.model().tokenizer())),
        http(options.max_body_bytes, worker_threads(options, e),
             [this](int status) { metrics.count("(refused before routing)", status); }) {}

  SlotEngine& engine;
  std::optional<ChatTemplate> chat_template;
  ServedModel served;
  ServerOptions options;
  HttpMetrics metrics;
  const size_t token_bytes;       // longest_token_bytes of the vocabulary
  std::atomic<int> preparing{0};  // requests being parsed, rendered or tokenized
  std::atomic<bool> stopping{false};
  const int64_t started =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  int port = 0;
  // Last: its workers use everything above, so it is destroyed (its workers joined) first.
  GatedHttpServer http;

  void routes();
  bool authorized(const httplib::Request& req, httplib::Response& res);
  void generate(const httplib::Request& req, httplib::Response& res, bool chat);
  // The prompt's tokens, or the error the client gets. `peer` tells a render whose client left.
  std::optional<ApiError> prompt_tokens(const GenerationRequest& r, PeerWatch& peer, std::vector<TokenId>& ids);
  // The context error where a prompt of `n` tokens (at least n, when `at_least`) leaves no room.
  std::optional<ApiError> past_context(const GenerationRequest& r, size_t n, bool at_least) const;
  void answer_whole(std::shared_ptr<PeerWatch> peer, httplib::Response& res, std::shared_ptr<CompletionJob> job,
                    const ResponseHead& head, std::string prefix, Clock::time_point t0);
  void answer_stream(std::shared_ptr<PeerWatch> peer, httplib::Response& res, std::shared_ptr<CompletionJob> job,
                     const ResponseHead& head, bool include_usage, std::string prefix, Clock::time_point t0);
};

bool OpenAiServer::Impl::authorized(const httplib::Request& req, httplib::Response& res) {
  if (options.api_key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  if (header.compare(0, bearer.size(), bearer) == 0 && same_secret(header.substr(bearer.size()), options.api_key))
    return true;
  send_error(res, server_error(401,
                               header.empty() ? "You didn't provide an API key. Send it as 'Authorization: Bearer KEY'."
                                              : "Incorrect API key provided.",
                               "invalid_request_error", "invalid_api_key"));
  return false;
}

std::optional<ApiError> OpenAiServer::Impl::past_context(const GenerationRequest& r, size_t n, bool at_least) const {
  // At least one token must fit after the prompt.
  if (n < size_t(engine.context())) return std::nullopt;
  const char* what = r.chat ? "messages" : "prompt";
  return bad_request("This model's maximum context length is " + std::to_string(engine.context()) +
                         " tokens. However, your " + what + " resulted in " + (at_least ? "at least " : "") +
                         std::to_string(n) + " tokens. Please reduce the length of the " + what + ".",
                     what, "context_length_exceeded");
}

std::optional<ApiError> OpenAiServer::Impl::prompt_tokens(const GenerationRequest& r, PeerWatch& peer,
                                                          std::vector<TokenId>& ids) {
  const Tokenizer& tok = engine.model().tokenizer();
  // Text of B bytes is at least ceil(B / token_bytes) tokens: past the context, it is refused
  // without spending seconds tokenizing it (an 8 MB prompt took 5-8 s).
  const auto too_long = [&](const std::string& text) {
    return past_context(r, (text.size() + token_bytes - 1) / token_bytes, /*at_least=*/true);
  };
  if (r.chat) {
    if (!chat_template) {
      return bad_request(
          "The model has no chat template (tokenizer.chat_template): start tandem serve with "
          "--template FILE.jinja, or send the prompt to /v1/completions.",
          "messages", "no_chat_template");
    }
    // The render stops when its client has gone or the server stops (SIGTERM).
    bool gone = false, shutting_down = false;
    const std::function<bool()> cancelled = [&] {
      shutting_down = shutting_down || stopping.load() || interrupted();
      gone = gone || GatedHttpServer::client_gone() || peer.peer_closed();
      return shutting_down || gone;
    };
    Result<std::string> text = chat_template->apply(r.conversation, /*add_generation_prompt=*/true, cancelled);
    if (!text.ok()) {
      if (shutting_down) {
        return server_error(503, "The server is shutting down: the chat template's render was stopped.",
                            "server_error", "server_shutting_down");
      }
      if (gone) return server_error(499, "The client closed the connection.", "invalid_request_error");
      if (text.status().code() == StatusCode::kInvalidArgument) {
        return bad_request("The chat template refused these messages: " + text.status().message(), "messages");
      }
      return server_error(500, "The chat template failed to render these messages: " + text.status().message(),
                          "server_error", "template_error");
    }
    if (auto e = too_long(*text)) return e;
    ids = chat_text_tokens(*chat_template, tok, *text);
  } else if (r.prompt_is_ids) {
    if (auto e = past_context(r, r.prompt_ids.size(), false)) return e;
    ids = r.prompt_ids;
    for (TokenId id : ids) {
      if (id >= tok.n_vocab()) {
        return bad_request("Invalid 'prompt': token id " + std::to_string(id) + " is outside the vocabulary of " +
                               std::to_string(tok.n_vocab()) + " tokens.",
                           "prompt", "invalid_value");
      }
    }
  } else {
    if (auto e = too_long(r.prompt)) return e;
    ids = tok.encode(r.prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  if (ids.empty()) return bad_request("The prompt has no tokens.", r.chat ? "messages" : "prompt", "invalid_value");
  return past_context(r, ids.size(), false);
}

void OpenAiServer::Impl::generate(const httplib::Request& req, httplib::Response& res, bool chat) {
  const Clock::time_point t0 = Clock::now();
  auto peer = std::make_shared<PeerWatch>(req.local_port, req.remote_port);
  std::shared_ptr<CompletionJob> job;
  ResponseHead head;
  std::string prefix;
  bool stream = false, include_usage = false;
  {
    Preparing counted(preparing);
    GenerationRequest r;
    std::optional<ApiError> error =
        chat ? parse_chat_request(req.body, served, r) : parse_completion_request(req.body, served, r);
    std::vector<TokenId> ids;
    if (!error) error = prompt_tokens(r, *peer, ids);
    if (error) {
      if (error->http_status == 499) {
        res.status = 499;  // nobody to tell (nginx's "client closed request"; never sent)
      } else {
        send_error(res, *error);
      }
      return;
    }
    job = std::make_shared<CompletionJob>();
    job->prompt = std::move(ids);
    job->max_tokens = r.max_tokens > 0 ? r.max_tokens : INT_MAX;
    job->sampler = r.sampler;
    job->stop = r.stop;
    job->ignore_eos = r.ignore_eos;
    head = new_response_head(chat, served.id);
    // Echoed token ids may decode to a part of a character: the answer must stay valid JSON text.
    if (!chat && r.echo) prefix = r.prompt_is_ids ? valid_utf8(engine.model().tokenizer().decode(r.prompt_ids)) : r.prompt;
    stream = r.stream;
    include_usage = r.include_usage;
  }
  engine.submit(job);
  if (stream) {
    answer_stream(std::move(peer), res, std::move(job), head, include_usage, std::move(prefix), t0);
  } else {
    answer_whole(std::move(peer), res, std::move(job), head, std::move(prefix), t0);
  }
}

void OpenAiServer::Impl::answer_whole(std::shared_ptr<PeerWatch> peer, httplib::Response& res,
                                      std::shared_ptr<CompletionJob> job, const ResponseHead& head, std::string text,
                                      Clock::time_point t0) {
  while (!job->wait(kPollInterval, text)) {
    if (GatedHttpServer::client_gone() || peer->peer_closed()) {
      job->cancel();     // nobody will read the answer: free the slot
      res.status = 499;  // (nginx's "client closed request"; never sent)
      return;
    }
  }
  if (job->reason() == FinishReason::kError || job->reason() == FinishReason::kCancelled) {
    send_error(res, job_error(*job));
    return;
  }
  send_json(res, 200, completion_json(head, text, job->reason(), job->stats()));
  metrics.observe_latency(std::chrono::duration<double>(Clock::now() - t0).count());
}

void OpenAiServer::Impl::answer_stream(std::shared_ptr<PeerWatch> peer, httplib::Response& res,
                                       std::shared_ptr<CompletionJob> job, const ResponseHead& head, bool include_usage,
                                       std::string prefix, Clock::time_point t0) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, job, head, include_usage, prefix, peer, t0](size_t, httplib::DataSink& sink) {
        auto send = [&](const std::string& event) { return sink.write(event.data(), event.size()); };
        bool ok = send(sse_event(chunk_json(head, prefix, /*first=*/true)));
        auto last_write = Clock::now();
        while (ok) {
          std::string text;
          const bool finished = job->wait(kPollInterval, text);
          if (!text.empty()) {
            ok = send(sse_event(chunk_json(head, text, false)));
            last_write = Clock::now();
          }
          if (!ok || finished) break;
          if (GatedHttpServer::client_gone() || peer->peer_closed()) ok = false;
          if (ok && Clock::now() - last_write > kKeepAliveInterval) {
            ok = send(": keep-alive\n\n");
            last_write = Clock::now();
          }
        }
        if (!ok) {
          job->cancel();
          return false;
        }
        if (job->reason() == FinishReason::kError || job->reason() == FinishReason::kCancelled) {
          // Mid-stream, an error is an event of its own (the status has been sent).
          send(sse_event(job_error(*job).to_json()));
        } else {
          send(sse_event(chunk_json(head, "", false, job->reason())));
          if (include_usage) send(sse_event(usage_chunk_json(head, job->stats())));
          metrics.observe_latency(std::chrono::duration<double>(Clock::now() - t0).count());
        }
        send("data: [DONE]\n\n");
        sink.done();
        return true;
      },
      [job](bool) { job->cancel(); });  // a no-op for a job that ended
}

void OpenAiServer::Impl::routes() {
  // Every /v1 route counts into /metrics and checks the key; /health never needs it.
  auto endpoint = [this](const char* name, std::function<void(const httplib::Request&, httplib::Response&)> body) {
    return [this, name, body](const httplib::Request& req, httplib::Response& res) {
      if (authorized(req, res)) body(req, res);
      metrics.count(name, res.status);
    };
  };
  auto chat = endpoint("/v1/chat/completions", [this](const auto& req, auto& res) { generate(req, res, true); });
  auto completions = endpoint("/v1/completions", [this](const auto& req, auto& res) { generate(req, res, false); });
  http.post("/v1/chat/completions", chat);
  http.post("/chat/completions", chat);
  http.post("/v1/completions", completions);
  http.post("/completions", completions);
  auto models = endpoint("/v1/models", [this](const auto&, auto& res) {
    send_json(res, 200, models_json(served.id, started, engine.context()));
  });
  http.get("/v1/models", models);
  http.get("/models", models);
  http.get(R"(/v1/models/(.+))", endpoint("/v1/models", [this](const auto& req, auto& res) {
             if (req.matches[1] != served.id) {
               ApiError e = bad_request("The model `" + std::string(req.matches[1]) + "` does not exist.", "model",
                                        "model_not_found");
               e.http_status = 404;
               send_error(res, e);
               return;
             }
             send_json(res, 200, models_json(served.id, started, engine.context())["data"][0]);
           }));
  http.get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const EngineCounters c = engine.counters();
    send_json(res, 200,
              {{"status", "ok"},
               {"slots", c.slots},
               {"slots_idle", c.slots - c.slots_busy},
               {"slots_processing", c.slots_busy},
               {"requests_queued", c.queued},
               {"requests_preparing", preparing.load()}});
    metrics.count("/health", res.status);
  });
  http.get("/metrics", endpoint("/metrics", [this](const auto&, auto& res) {
             res.set_content(metrics.render(engine.counters(), preparing.load()), "text/plain; version=0.0.4");
           }));
  // Whatever cpp-httplib itself refuses (the gate refuses bad framing, unknown paths and methods
  // first) still gets an error object.
  http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, server_error(404, "Unknown request URL: " + req.method + " " + req.path + ".",
                                   "invalid_request_error", "unknown_url"));
    } else if (res.status == 413) {
      send_error(res, server_error(
                          413, "The request body is larger than " + std::to_string(options.max_body_bytes) + " bytes.",
                          "invalid_request_error", "request_too_large"));
    } else {
      send_error(res, server_error(res.status, "The request failed (HTTP " + std::to_string(res.status) + ").",
                                   res.status >= 500 ? "server_error" : "invalid_request_error"));
    }
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, server_error(500, "Internal error: " + what, "server_error"));
  });
}

OpenAiServer::OpenAiServer(SlotEngine& engine, std::optional<ChatTemplate> chat_template, ServedModel served,
                           ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(chat_template), std::move(served), std::move(options))) {
  impl_->routes();
}

OpenAiServer::~OpenAiServer() = default;

Result<int> OpenAiServer::bind() {
  Impl& i = *impl_;
  if (!i.http.bind(i.options.host, i.options.port, i.port)) {
    if (i.options.port == 0) return IoError("serve: cannot listen on " + i.options.host + " (any port)");
    return IoError("serve: cannot listen on " + i.options.host + ":" + std::to_string(i.options.port) +
                   " (in use, or not an address of this machine; --port 0 takes any free port)");
  }
  return i.port;
}

Status OpenAiServer::listen() {
  if (!impl_->http.serve()) return IoError("serve: the listening socket failed");
  return Status::Ok();
}

void OpenAiServer::stop() {
  impl_->stopping.store(true);
  impl_->http.shutdown();
}

}  // namespace tandem::server
