#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "chat/chat_template.h"
#include "model/gguf/gguf.h"
#include "model/tokenizer/tokenizer.h"
#include "tools/tandem/commands.h"

namespace tandem::cli {

Command add_template(CLI::App& app) {
  struct Opts {
    std::string model, choice;
    std::vector<std::string> messages;
    bool no_generation_prompt = false, json = false, show = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("template", "Print the prompt a model's chat template makes of a conversation");
  sub->add_option("-m,--model", o->model, "GGUF file (a model or a vocabulary-only file)")->required();
  sub->add_option("--messages", o->messages,
                  "JSON file: an OpenAI-style messages array, or {\"messages\": [...], \"tools\": [...]}; "
                  "with --json it may repeat (one output line per file)");
  sub->add_option("--template", o->choice,
                  "a named template of the file (tokenizer.chat_template.NAME), or a .jinja file; "
                  "default: tokenizer.chat_template");
  sub->add_flag("--no-generation-prompt", o->no_generation_prompt,
                "do not open the assistant's turn (add_generation_prompt=false)");
  sub->add_flag("--show", o->show, "print the template's own text (no --messages needed)");
  sub->add_flag("--json", o->json,
                "print {messages, prompt | error, template, bos_token, eos_token} as JSON, a line per messages file");
  return {sub, [o]() -> Status {
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> f, gguf::GgufFile::open(o->model));
            TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::from_gguf(*f));
            TANDEM_ASSIGN_OR_RETURN(ChatTemplate chat, ChatTemplate::from_gguf(*f, *tok, o->choice));
            if (o->show) {
              std::cout << chat.source();
              return Status::Ok();
            }
            if (o->messages.empty()) return InvalidArgument("template: --messages FILE.json is required (or --show)");
            if (!o->json) {
              if (o->messages.size() > 1) return InvalidArgument("template: several --messages files need --json");
              TANDEM_ASSIGN_OR_RETURN(Conversation conv, Conversation::from_file(o->messages[0]));
              TANDEM_ASSIGN_OR_RETURN(std::string prompt, chat.apply(conv, !o->no_generation_prompt));
              std::cout << prompt;  // exactly the prompt: no newline is added
              return Status::Ok();
            }
            // One line per file; a file that fails gets its error on its line, and the exit
            // status says whether any failed.
            Status first_error;
            for (const std::string& path : o->messages) {
              nlohmann::ordered_json j;
              j["messages"] = path;
              Result<Conversation> conv = Conversation::from_file(path);
              Result<std::string> prompt =
                  conv.ok() ? chat.apply(*conv, !o->no_generation_prompt) : Result<std::string>(conv.status());
              if (prompt.ok())
                j["prompt"] = *prompt;
              else
                j["error"] = prompt.status().message();
              if (!prompt.ok() && first_error.ok()) first_error = prompt.status();
              j["template"] = chat.origin();
              j["bos_token"] = chat.bos_token();
              j["eos_token"] = chat.eos_token();
              // Invalid UTF-8 in a template's output is replaced rather than failing the dump.
              std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
            }
            std::cout.flush();
            if (!first_error.ok()) return first_error;
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
