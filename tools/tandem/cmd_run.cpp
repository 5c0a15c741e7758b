#include <cstdio>
#include <iostream>

#include "core/interrupt.h"
#include "runtime/session.h"
#include "tools/tandem/execution_report_view.h"
#include "tools/tandem/model_options.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/sampling_options.h"
#include "chat/chat_session.h"
#include "tools/tandem/session_factory.h"

namespace tandem::cli {

Command add_run(CLI::App& app) {
  struct Opts {
    ModelOptions model;
    DeviceOptions devices;
    std::string prompt, prompt_ids;
    int n_predict = 64;
    bool print_ids = false, verbose = false, ignore_eos = false, chat = false;
    std::string system, chat_template;
    SamplerOptions sampler;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("run", "Generate text from a prompt");
  o->model.add_to(sub);
  o->devices.add_to(sub);
  auto* p = sub->add_option("-p,--prompt", o->prompt, "prompt text");
  auto* ids = sub->add_option("--prompt-ids", o->prompt_ids, "prompt as token ids, e.g. \"1 2 3\"");
  p->excludes(ids);
  sub->add_option("-n,--n-predict", o->n_predict, "tokens to generate, >= 0 (at most what the context leaves)")
      ->transform(integer_at_least(0))
      ->capture_default_str();
  add_sampler_options(sub, o->sampler);
  sub->add_flag("--chat", o->chat,
                "the prompt is a user message: apply the model's chat template (tandem chat's one-shot form)");
  sub->add_option("--system", o->system, "with --chat: a system message first");
  sub->add_option("--template", o->chat_template,
                  "with --chat: a named template of the file (tokenizer.chat_template.NAME) or a .jinja file");
  sub->add_flag("--ids", o->print_ids, "print the generated token ids instead of text");
  sub->add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-generation tokens (EOS, end of turn)");
  sub->add_flag("-v,--verbose", o->verbose, "print timings and the memory pool to stderr");

  return {sub, [o]() -> Status {
            if (o->prompt.empty() && o->prompt_ids.empty()) {
              return InvalidArgument("run: give a prompt with -p TEXT or --prompt-ids \"1 2 3\"");
            }
            TANDEM_RETURN_IF_ERROR(o->sampler.validate());
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, Model::load(o->model.model));
            warn_past_trained_context(*model, o->model.context);
            if (o->chat && !o->prompt_ids.empty()) return InvalidArgument("run: --chat takes -p TEXT, not --prompt-ids");
            if (!o->chat && (!o->system.empty() || !o->chat_template.empty()))
              return InvalidArgument("run: --system and --template apply with --chat");
            std::vector<TokenId> prompt;
            if (o->chat) {
              // One turn of a conversation: the same prompt tandem chat and tandem serve build.
              TANDEM_ASSIGN_OR_RETURN(ChatTemplate chat,
                                      ChatTemplate::from_gguf(model->file(), model->tokenizer(), o->chat_template));
              TANDEM_RETURN_IF_ERROR(chat.check_renders());  // the same start-up check as chat and serve
              Conversation conv;
              if (!o->system.empty()) conv.messages.push_back({{"role", "system"}, {"content", o->system}});
              conv.messages.push_back({{"role", "user"}, {"content", o->prompt}});
              TANDEM_ASSIGN_OR_RETURN(prompt, chat_prompt_tokens(chat, model->tokenizer(), conv));
            } else if (!o->prompt_ids.empty()) {
              TANDEM_ASSIGN_OR_RETURN(prompt, parse_ids(o->prompt_ids));
              TANDEM_RETURN_IF_ERROR(model->tokenizer().check_ids(prompt, "--prompt-ids"));
            } else {
              prompt = model->tokenizer().encode(o->prompt, true, true);
            }
            TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Forward> forward,
                                    make_forward(model, with_model_file(o->devices, o->model.model), o->model.threads,
                                                 o->model.context, 512));
            std::unique_ptr<Session> session = Session::over(model, std::move(forward));
            GenerateOptions g;
            g.n_predict = o->n_predict;
            g.stop_at_eog = !o->ignore_eos;
            g.sampler = o->sampler;
            std::vector<TokenId> out;
            GenerateStats st;
            // Ctrl-C or SIGTERM while generating: stop after the token in hand, print what was
            // generated, and exit 130/143 (main).
            InterruptScope interruptible;
            TANDEM_RETURN_IF_ERROR(session->generate(prompt, g, [&](TokenId t) {
              out.push_back(t);
              if (!o->print_ids) {
                std::cout << model->tokenizer().token_to_piece(t, false) << std::flush;
              }
              return !interrupted();
            }, &st));
            if (!o->devices.trace.empty()) TANDEM_RETURN_IF_ERROR(session->forward().write_trace(o->devices.trace));
            if (o->print_ids) {
              for (size_t i = 0; i < out.size(); ++i) std::cout << (i ? " " : "") << out[i];
            }
            std::cout << "\n" << std::flush;
            if (st.stopped_at_context) {
              std::fprintf(stderr,
                           "run: stopped after %d of the %d tokens -n asked for: the context of %d tokens is full "
                           "(the prompt took %d); a larger -c makes room (the model was trained to %d)\n",
                           st.n_generated, o->n_predict, session->forward().context(), st.n_prompt,
                           model->config().context_length);
            }
            if (o->verbose) {
              std::fprintf(stderr, "model file: %s\n", model->file().residency_text().c_str());
              std::fprintf(stderr, "prompt %d tokens in %.3f s (%.2f tok/s); generated %d tokens in %.3f s (%.2f tok/s)\n",
                           st.n_prompt, st.prefill_seconds, st.n_prompt / st.prefill_seconds,
                           st.n_generated, st.decode_seconds,
                           st.decode_seconds > 0 ? st.n_generated / st.decode_seconds : 0.0);
              std::fprintf(stderr, "memory pool:\n%s\n", session->forward().memory_report().c_str());
              std::fprintf(stderr, "%s", execution_table(session->forward().execution_report()).c_str());
            }
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
