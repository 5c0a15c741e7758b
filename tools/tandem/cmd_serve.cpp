// `tandem serve`: the model behind an OpenAI-compatible HTTP API (src/server), N slots generating
// at once with their decode steps batched into one pass. Ctrl-C or SIGTERM stops it cleanly:
// requests in flight end (503 or a stream's error event) and the command exits 0.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/interrupt.h"
#include "server/http_server.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/model_options.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/sampling_options.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {
namespace {

// How long a stop (SIGINT, SIGTERM) waits for the requests in flight before the process exits anyway.
constexpr auto kStopGrace = std::chrono::seconds(5);

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

// A key given must be one a client can send: an empty one turned authentication off without a
// word, and one with spaces or controls could never match (HTTP trims a header value's spaces,
// and cpp-httplib percent-decodes header values, so a '%' in it never matches either).
Status check_api_key(const std::string& key, const char* where) {
  if (key.empty()) {
    return InvalidArgument(std::string("serve: ") + where +
                           " is empty, which would turn authentication off; give a key, or leave it out to "
                           "serve without one");
  }
  for (unsigned char c : key) {
    if (c <= 0x20 || c >= 0x7F || c == '%') {
      return InvalidArgument(std::string("serve: ") + where +
                             " holds a space, a control character, '%' or a non-ASCII byte: a client could "
                             "never send it in 'Authorization: Bearer KEY' (use printable ASCII)");
    }
  }
  return Status::Ok();
}

std::string model_id(const std::string& path) {
  std::filesystem::path p(path);
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

}  // namespace

Command add_serve(CLI::App& app) {
  struct Opts {
    ModelOptions model;
    DeviceOptions devices;
    server::ServerOptions server;
    std::string chat_template, alias;
    int slots = 4, batch = 512;
    SamplerOptions sampler;
    CLI::Option* seed = nullptr;
    CLI::Option* api_key = nullptr;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "An OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions, /v1/models, /health, /metrics");
  o->model.add_to(sub);
  o->devices.add_to(sub);
  sub->add_option("--host", o->server.host, "address to listen on (127.0.0.1: this machine only)")
      ->capture_default_str();
  sub->add_option("--port", o->server.port, "port, 0..65535 (0: any free port; the line 'listening on' says which)")
      ->transform(integer_in(0, 65535))
      ->capture_default_str();
  sub->add_option("--slots", o->slots,
                  "requests generated at once, 1..256, each with a KV cache of -c tokens; more requests queue")
      ->transform(integer_in(1, 256))
      ->capture_default_str();
  sub->add_option("-b,--batch", o->batch,
                  "tokens per forward pass (decode rows of all slots, then prompt chunks), 1..4096")
      ->transform(integer_in(1, 4096))
      ->capture_default_str();
  o->api_key = sub->add_option("--api-key", o->server.api_key,
                               "require 'Authorization: Bearer KEY' on /v1 and /metrics (also TANDEM_API_KEY; "
                               "printable ASCII, not empty)");
  sub->add_option("--alias", o->alias, "the model's id in the API (default: the file's name without .gguf)");
  sub->add_option("--template", o->chat_template,
                  "a named template of the file (tokenizer.chat_template.NAME) or a .jinja file");
  sub->add_option("--http-threads", o->server.http_threads,
                  "requests served at once (prepared, queued or streaming), 1..4096 (0: 4 per slot + 16); a "
                  "connection waiting for its request holds none")
      ->transform(integer_in(0, 4096));
  add_sampler_options(sub, o->sampler);
  o->seed = sub->get_option("--seed");
  o->seed->description("sampling seed of requests that give none, 0..2^64-1 (default: a random one per request)");

  return {sub, [o]() -> Status {
            TANDEM_RETURN_IF_ERROR(o->sampler.validate());
            if (o->api_key->count() > 0) {
              TANDEM_RETURN_IF_ERROR(check_api_key(o->server.api_key, "--api-key"));
            } else if (const char* key = std::getenv("TANDEM_API_KEY")) {
              o->server.api_key = key;
              TANDEM_RETURN_IF_ERROR(check_api_key(o->server.api_key, "TANDEM_API_KEY"));
            }
            if (o->batch < o->slots) {
              return InvalidArgument("--batch " + std::to_string(o->batch) + " must be at least --slots " +
                                     std::to_string(o->slots) + " (every slot's decode token goes in one pass)");
            }
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, Model::load(o->model.model));
            warn_past_trained_context(*model, o->model.context);
            // A model without a chat template still serves /v1/completions.
            std::optional<ChatTemplate> tmpl;
            Result<ChatTemplate> found = ChatTemplate::from_gguf(model->file(), model->tokenizer(), o->chat_template);
            if (found.ok()) {
              // A template that cannot render one user message would fail every chat request
              // while /health says ok: refuse to start instead (--template gives another; a
              // fallback to no template would hide the broken one behind 400s).
              TANDEM_RETURN_IF_ERROR(found->check_renders());
              tmpl = std::move(found).value();
            } else if (o->chat_template.empty() && found.status().code() == StatusCode::kNotFound) {
              std::fprintf(stderr,
                           "tandem serve: warning: %s has no chat template (tokenizer.chat_template): "
                           "/v1/chat/completions answers 400 (--template FILE.jinja gives one); /v1/completions works\n",
                           o->model.model.c_str());
            } else {
              return found.status();
            }
            TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Forward> forward,
                                    make_forward(model, with_model_file(o->devices, o->model.model), o->model.threads,
                                                 o->model.context, o->batch, o->slots));
            const ExecutionReport report = forward->execution_report();
            server::SlotEngine engine(model, std::move(forward));

            server::ServedModel served;
            served.id = o->alias.empty() ? model_id(o->model.model) : o->alias;
            served.sampling = o->sampler;
            served.random_seed = o->seed->count() == 0;
            server::OpenAiServer http(engine, std::move(tmpl), served, o->server);
            TANDEM_ASSIGN_OR_RETURN(int port, http.bind());
            if (!loopback(o->server.host) && o->server.api_key.empty()) {
              std::fprintf(stderr,
                           "tandem serve: warning: listening on %s without --api-key: anyone who reaches this port "
                           "can use the model\n",
                           o->server.host.c_str());
            }
            std::fprintf(stderr, "tandem serve: model '%s' (%s), %d slots x %d tokens of context, KV cache %.1f MiB\n",
                         served.id.c_str(), o->model.model.c_str(), engine.slots(), engine.context(),
                         double(report.kv_bytes) / (1 << 20));
            const std::string host =
                o->server.host.find(':') != std::string::npos ? "[" + o->server.host + "]" : o->server.host;
            std::printf("tandem serve: listening on http://%s:%d\n", host.c_str(), port);
            std::fflush(stdout);

            // Ctrl-C / SIGTERM: a watcher ends the engine (waiting requests answer at once) and
            // then the HTTP server, whose listen() returns once the requests in flight have ended
            // (renders poll the stop; streams end with an error event). Whatever does not end
            // within kStopGrace (a render that never polls, a forward pass of a huge batch) does
            // not keep the process: it exits as the signal would have ended it.
            InterruptScope interruptible;
            std::atomic<bool> done{false};
            std::thread watcher([&] {
              while (!done.load() && !interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
              if (const int sig = interrupt_signal(); sig != 0) {
                std::thread([sig] {
                  std::this_thread::sleep_for(kStopGrace);
                  std::fprintf(stderr,
                               "tandem serve: requests still running %d s after %s: exiting without waiting for "
                               "them\n",
                               int(kStopGrace.count()), sig == SIGINT ? "SIGINT" : "SIGTERM");
                  std::_Exit(128 + sig);
                }).detach();
              }
              engine.stop();
              http.stop();
            });
            Status served_status = http.listen();
            done.store(true);
            watcher.join();
            if (const int sig = interrupt_signal(); sig != 0) {
              std::fprintf(stderr, "tandem serve: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
              clear_interrupt();  // a requested stop is a clean exit
            }
            return served_status;
          }};
}

}  // namespace tandem::cli
