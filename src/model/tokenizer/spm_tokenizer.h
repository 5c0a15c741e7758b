// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"): llama.cpp's llm_tokenizer_spm.
#pragma once

#include <memory>
#include <string>

#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/vocab_index.h"

namespace tandem::tokenizer {

class SpmTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(VocabData data, const std::string& origin);
  // The index holds views into data_.tokens: a copy would point into the original.
  SpmTokenizer(const SpmTokenizer&) = delete;
  SpmTokenizer& operator=(const SpmTokenizer&) = delete;

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string token_to_piece(TokenId id, bool render_special) const override;

 private:
  explicit SpmTokenizer(VocabData data) : Tokenizer(std::move(data)) {}
  // Tokenizes one run of text whose spaces are already escaped to U+2581.
  void encode_escaped(const std::string& text, std::vector<TokenId>& out) const;
  // A byte that no piece covers: its <0xXX> token, else a token spelling the byte, else <unk>.
  void append_byte(uint8_t byte, std::vector<TokenId>& out) const;

  VocabIndex index_;
  TokenId byte_tokens_[256];  // <0xXX> ids (-1 when absent)
};

}  // namespace tandem::tokenizer
