#include <iostream>
#include <memory>

#include "model/gguf/gguf.h"
#include "model/tokenizer/tokenizer.h"
#include "tools/tandem/commands.h"

namespace tandem::cli {

Command add_tokenize(CLI::App& app) {
  struct Opts {
    std::string model, prompt;
    bool raw = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("tokenize", "Print the token ids of a text");
  sub->add_option("-m,--model", o->model, "GGUF file (a model or a vocabulary-only file)")->required();
  sub->add_option("-p,--prompt", o->prompt, "text to tokenize")->required();
  sub->add_flag("--raw", o->raw, "no BOS/EOS, and special-token text is plain text");
  return {sub, [o]() -> Status {
            // Only the tokenizer is needed, so vocabulary-only files work too.
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> f, gguf::GgufFile::open(o->model));
            TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::from_gguf(*f));
            const std::vector<TokenId> ids = tok->encode(o->prompt, !o->raw, !o->raw);
            for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
            std::cout << "\n";
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
