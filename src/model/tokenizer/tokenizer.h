// Tokenizers built from a GGUF's `tokenizer.*` metadata, matching llama.cpp token for token:
// SentencePiece-style (`tokenizer.ggml.model = "llama"`, with byte fallback) and byte-level BPE
// (`"gpt2"`, pre-tokenizer chosen by `tokenizer.ggml.pre`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tandem::gguf {
class GgufFile;
}

namespace tandem {

using TokenId = int32_t;

// Token attributes as GGUF stores them in tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

// Everything a tokenizer is built from; filled from GGUF metadata or by hand (tests, gen-model).
struct VocabData {
  std::string model;  // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
  std::string pre;    // tokenizer.ggml.pre; "" means "default"
  std::vector<std::string> tokens;
  std::vector<float> scores;         // may be empty
  std::vector<int32_t> token_types;  // may be empty (all normal)
  std::vector<std::string> merges;   // BPE only: "left right"
  // eot = -1: create() looks for it by text (<|eot_id|>, <|im_end|>, <|end|>, ...) as llama.cpp does.
  TokenId bos = -1, eos = -1, unk = -1, pad = -1, eot = -1;
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = true;  // SentencePiece: prepend a space (tokenizer.ggml.add_space_prefix)
  // general.name: llama.cpp keys a few per-model token attribute fixes on it (Phi-3 strips the
  // whitespace after its special tokens).
  std::string model_name;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  static Result<std::unique_ptr<Tokenizer>> create(VocabData data);
  // Reads tokenizer.* from the file; errors name the file and the key.
  static Result<VocabData> read_vocab(const gguf::GgufFile& file);
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const gguf::GgufFile& file);

  // add_special: add BOS/EOS as the vocabulary's flags say. parse_special: text that spells a
  // control or user-defined token becomes that token (otherwise it is tokenized as plain text).
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // The text of one token (byte tokens decode to their byte; SentencePiece's "▁" to a space); ""
  // for an id outside the vocabulary. No input reaches these with such an id: ids a user gives are
  // checked with check_ids() where they come in (run --prompt-ids, the server's prompt arrays), and
  // a model samples only ids of its vocabulary (its token list has one entry per embedding row).
  virtual std::string token_to_piece(TokenId id, bool render_special) const = 0;
  // Concatenated pieces (llama.cpp detokenize semantics).
  std::string decode(std::span<const TokenId> ids, bool render_special = false) const;
  // Ok when every id is a token of this vocabulary; otherwise "WHAT: ID is outside the vocabulary
  // of N tokens (0..N-1)" for the first that is not.
  Status check_ids(std::span<const TokenId> ids, std::string_view what) const;

  const VocabData& vocab() const { return data_; }
  int32_t n_vocab() const { return int32_t(data_.tokens.size()); }
  TokenId bos() const { return data_.bos; }
  TokenId eos() const { return data_.eos; }
  // End of generation: EOS, EOT, and the tokens llama.cpp recognises by text (<|eot_id|>,
  // <|im_end|>, <|endoftext|>, ...).
  bool is_eog(TokenId id) const {
    return id >= 0 && (id == data_.eos || id == data_.eot ||
                       std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end());
  }

 protected:
  explicit Tokenizer(VocabData data) : data_(std::move(data)) {}
  VocabData data_;
  std::vector<TokenId> eog_ids_;  // filled by the concrete tokenizer
  bool clean_spaces_ = false;     // decode: llama.cpp's " ," / " '" clean-up (most BPE pre types)
};

}  // namespace tandem
