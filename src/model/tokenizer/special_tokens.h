// Splitting text on special-token spellings before tokenization (llama.cpp's
// tokenizer_st_partition).
#pragma once

#include <string_view>
#include <vector>

#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/vocab_index.h"

namespace tandem::tokenizer {

// A piece of the input: either raw text to tokenize or a token that was spelled out.
struct Fragment {
  TokenId token = -1;  // >= 0: a special token; -1: raw text text[offset, offset + length)
  size_t offset = 0;
  size_t length = 0;
};

// Special tokens are searched longest first; each occurrence splits its fragment. With
// parse_special = false, control and unknown tokens stay plain text, but user-defined tokens are
// still split out (as Hugging Face tokenizers do for added tokens). lstrip/rstrip attributes
// swallow the whitespace next to a token.
std::vector<Fragment> partition_special_tokens(std::string_view text, const VocabData& data,
                                               const VocabIndex& index, bool parse_special);

}  // namespace tandem::tokenizer
