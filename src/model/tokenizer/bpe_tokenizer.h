// Byte-level BPE tokenizer (tokenizer.ggml.model = "gpt2"): llama.cpp's llm_tokenizer_bpe with the
// pre-tokenizer named by tokenizer.ggml.pre.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/regex_splitter.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/vocab_index.h"

namespace tandem::tokenizer {

class BpeTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(VocabData data, const std::string& origin);
  // The index holds views into data_.tokens: a copy would point into the original.
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string token_to_piece(TokenId id, bool render_special) const override;

 private:
  BpeTokenizer(VocabData data, const PreTokenizerSpec& spec, RegexSplitter splitter)
      : Tokenizer(std::move(data)), spec_(spec), splitter_(std::move(splitter)) {}
  // Merges one pre-tokenized (byte-encoded) word and appends its tokens.
  void encode_word(const std::string& word, std::vector<TokenId>& out) const;
  int merge_rank(std::string_view left, std::string_view right, std::string& scratch) const;

  const PreTokenizerSpec& spec_;
  RegexSplitter splitter_;
  VocabIndex index_;
  // "left right" -> rank (its line in tokenizer.ggml.merges; lower merges first).
  std::unordered_map<std::string, int, StringViewHash, std::equal_to<>> merge_ranks_;
};

}  // namespace tandem::tokenizer
