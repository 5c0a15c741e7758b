#include <climits>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "chat/chat_session.h"
#include "core/interrupt.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/line_reader.h"
#include "tools/tandem/model_options.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/sampling_options.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {
namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

void print_turn_stats(const TurnStats& t) {
  const GenerateStats& g = t.generate;
  const int evaluated = g.n_prompt - g.n_reused;
  std::fprintf(stderr,
               "[prompt %d tokens: %d reused from the cache, %d evaluated in %.3f s (%.1f tok/s); "
               "reply %d tokens in %.3f s (%.1f tok/s)]\n",
               g.n_prompt, g.n_reused, evaluated, g.prefill_seconds,
               g.prefill_seconds > 0 ? evaluated / g.prefill_seconds : 0.0, g.n_generated, g.decode_seconds,
               g.decode_seconds > 0 ? g.n_generated / g.decode_seconds : 0.0);
}

}  // namespace

Command add_chat(CLI::App& app) {
  struct Opts {
    ModelOptions model;
    DeviceOptions devices;
    std::string system, chat_template;
    int n_predict = -1;
    bool context_shift = false, verbose = false;
    SamplerOptions sampler;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "chat",
      "Talk with a model: its chat template, the KV cache kept across turns (/reset, /exit; Ctrl-C stops a reply)");
  o->model.add_to(sub);
  o->devices.add_to(sub);
  sub->add_option("--system", o->system, "a system message that starts the conversation");
  sub->add_option("--template", o->chat_template,
                  "a named template of the file (tokenizer.chat_template.NAME) or a .jinja file");
  sub->add_option("-n,--n-predict", o->n_predict, "tokens per reply at most, -1..2^31 (-1: until the end of the turn)")
      ->transform(integer_at_least(-1))
      ->capture_default_str();
  sub->add_flag("--context-shift", o->context_shift,
                "when the conversation fills the context, drop its oldest turns (the system message stays) "
                "instead of refusing the message");
  add_sampler_options(sub, o->sampler);
  sub->add_flag("-v,--verbose", o->verbose,
                "after each reply, the tokens reused, evaluated and generated, with timings");

  return {
      sub, [o]() -> Status {
        TANDEM_RETURN_IF_ERROR(o->sampler.validate());
        TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, Model::load(o->model.model));
        warn_past_trained_context(*model, o->model.context);
        TANDEM_ASSIGN_OR_RETURN(ChatTemplate tmpl,
                                ChatTemplate::from_gguf(model->file(), model->tokenizer(), o->chat_template));
        TANDEM_RETURN_IF_ERROR(tmpl.check_renders());  // before the weights load, not at the first message
        TANDEM_ASSIGN_OR_RETURN(
            std::unique_ptr<Forward> forward,
            make_forward(model, with_model_file(o->devices, o->model.model), o->model.threads, o->model.context, 512));
        std::unique_ptr<Session> session = Session::over(model, std::move(forward));
        ChatOptions options;
        options.system = o->system;
        options.context_shift = o->context_shift;
        options.generate.n_predict = o->n_predict < 0 ? INT_MAX : o->n_predict;
        options.generate.sampler = o->sampler;
        options.cancelled = [] { return interrupted(); };  // Ctrl-C stops a render too
        ChatSession chat(*session, std::move(tmpl), options);

        LineReader reader;
        if (reader.interactive()) {
          std::fprintf(stderr,
                       "tandem chat: %s, context %d tokens. /reset starts over, /exit or Ctrl-D leaves, "
                       "Ctrl-C stops a reply.\n",
                       o->model.model.c_str(), session->forward().context());
        }
        while (auto line = reader.read("> ")) {
          const std::string text = trimmed(*line);
          if (text.empty()) continue;
          if (text == "/exit" || text == "/quit") break;
          if (text == "/reset") {
            chat.reset();
            std::fprintf(stderr, "(the conversation starts over)\n");
            continue;
          }
          if (text[0] == '/') {
            std::fprintf(stderr, "chat: unknown command %s (/reset, /exit)\n", text.c_str());
            continue;
          }
          bool printed = false;
          Result<TurnStats> turn = [&] {
            InterruptScope interruptible;  // Ctrl-C stops the reply, not the session
            return chat.send(*line, [&](const std::string& piece) {
              std::cout << piece << std::flush;
              printed = true;
              return !interrupted();
            });
          }();
          if (turn.ok() || printed) std::cout << "\n" << std::flush;
          if (interrupt_signal() == SIGTERM) break;  // main reports it and exits 143
          const bool stopped = interrupted();
          clear_interrupt();
          if (!turn.ok() && stopped) {  // Ctrl-C while the template rendered: nothing was said
            std::fprintf(stderr, "(stopped)\n");
            continue;
          }
          if (!turn.ok()) {
            // A message that cannot be answered (too long for the context) leaves the session as it was.
            if (turn.status().code() != StatusCode::kOutOfRange) return turn.status();
            std::fprintf(stderr, "tandem: error: %s\n", turn.status().message().c_str());
            continue;
          }
          if (stopped) std::fprintf(stderr, "(reply stopped)\n");
          if (turn->n_dropped_messages > 0)
            std::fprintf(stderr, "(context shift: the %d oldest messages were dropped)\n", turn->n_dropped_messages);
          if (turn->generate.stopped_at_context)
            std::fprintf(stderr,
                         "chat: the reply stopped because the context of %d tokens is full; /reset starts over\n",
                         session->forward().context());
          if (o->verbose) print_turn_stats(*turn);
        }
        return Status::Ok();
      }};
}

}  // namespace tandem::cli
