// Runs a pre-tokenizer's regex list with PCRE2 and returns the words, byte-encoded for GPT-2
// style BPE.
//
// The regexes are written for llama.cpp's engine, which differs from PCRE2 in a few places; the
// patterns are rewritten at compile time so the splits come out as llama.cpp's do:
//   - \s means exactly Unicode White_Space (llama.cpp's whitespace table);
//   - \d and \b are ASCII-only (llama.cpp matches them with std::regex, digits collapsed);
//   - \p{Lu}/\p{Ll}/\p{Lt}/\p{Lm}/\p{Lo} mean any letter (llama.cpp maps them all to \p{L});
//   - '~' is not in \p{S} (llama.cpp's ASCII stand-in for the symbol class omits it);
//   - $ matches only at the very end (std::regex ECMAScript semantics).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tandem::tokenizer {

class RegexSplitter {
 public:
  static Result<RegexSplitter> compile(const std::vector<std::string>& patterns);

  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  ~RegexSplitter();

  // Splits `text` (any bytes: malformed UTF-8 becomes U+FFFD first, as in llama.cpp) and appends
  // each word to `words`, every byte replaced by its GPT-2 stand-in when byte_encode is set.
  void split(std::string_view text, bool byte_encode, std::vector<std::string>& words) const;

  // The PCRE2 form of one llama.cpp-dialect pattern (exposed for tests).
  static std::string translate(std::string_view pattern);

 private:
  struct Compiled;
  RegexSplitter() = default;
  std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace tandem::tokenizer
