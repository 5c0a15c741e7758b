// The table of byte-level BPE pre-tokenizers: tokenizer.ggml.pre name -> the regexes that cut
// text into words before BPE merges run, plus the per-type flags llama.cpp attaches to each.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem::tokenizer {

struct PreTokenizerSpec {
  // Applied in order: each regex splits every piece the previous ones produced (text between
  // matches stays a piece of its own). Written in llama.cpp's dialect; see regex_splitter.h.
  std::vector<std::string> regexes;
  bool ignore_merges = false;   // a word that is already a token is emitted as is (Llama 3, ...)
  bool clean_spaces = true;     // detokenizer removes " ," style spaces
  bool add_bos = false;         // default of tokenizer.ggml.add_bos_token
  bool has_default_bos = true;  // false: no default BOS id (ChatGLM)
};

// nullptr when `pre` is not a known pre-tokenizer. "" means "default", as in llama.cpp.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view pre);

// Every supported name, comma separated, for error messages.
std::string supported_pre_tokenizers();

}  // namespace tandem::tokenizer
