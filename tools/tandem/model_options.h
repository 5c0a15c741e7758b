// Options shared by the commands that run a model (run, bench): model path, threads, context.
#pragma once

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"
#include "model/gguf/gguf.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem::cli {

struct ModelOptions {
  std::string model;
  int threads = default_threads();
  int context = 0;

  void add_to(CLI::App* sub, bool model_required = true) {
    auto* m = sub->add_option("-m,--model", model, "GGUF model file");
    if (model_required) m->required();
    sub->add_option("-t,--threads", threads, "CPU threads, 1..1024")->transform(integer_in(1, 1024))->capture_default_str();
    sub->add_option("-c,--ctx-size", context, "context length in tokens, 0..1048576 (0: the model's, at most 4096)")
        ->transform(integer_in(0, 1 << 20));
    auto* map = sub->add_flag_callback(
        "--mmap", [] { gguf::set_default_residency(gguf::Residency::kMap); },
        "map the model file (lazy, shared with the page cache) even where its weights are f32/f16/bf16, "
        "which are otherwise read into huge pages up to half the machine's memory for faster decode "
        "(quantized files are mapped unless --no-mmap: the cpu repacks them); also TANDEM_MMAP=1");
    auto* no_map = sub->add_flag_callback(
        "--no-mmap", [] { gguf::set_default_residency(gguf::Residency::kRead); },
        "read the whole model file into memory and never map it: a run survives the file being "
        "replaced or truncated on disk, at the cost of memory (quantized files: twice the weights)");
    map->excludes(no_map);
  }
};

// -c past the context the model was trained to: allowed (as llama.cpp), with a word that what
// comes out past it may be poor.
inline void warn_past_trained_context(const Model& model, int context) {
  const int trained = model.config().context_length;
  if (trained > 0 && context > trained) {
    std::fprintf(stderr, "tandem: warning: -c %d is past the %d tokens the model was trained on; text past them may degrade\n",
                 context, trained);
  }
}

// Parses "1 2 3" (spaces or commas) into ids; the error names the offending item.
inline Result<std::vector<TokenId>> parse_ids(const std::string& text) {
  std::vector<TokenId> ids;
  std::string item;
  std::istringstream in(text);
  while (in >> item) {
    for (std::string part; !item.empty();) {
      const size_t comma = item.find(',');
      part = item.substr(0, comma);
      item = comma == std::string::npos ? "" : item.substr(comma + 1);
      if (part.empty()) continue;
      size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(part, &used);
      } catch (...) {
        used = 0;
      }
      if (used != part.size() || v < 0 || v > INT32_MAX) {
        return InvalidArgument("--prompt-ids: '" + part + "' is not a token id");
      }
      ids.push_back(TokenId(v));
    }
  }
  if (ids.empty()) return InvalidArgument("--prompt-ids: no ids given");
  return ids;
}

}  // namespace tandem::cli
