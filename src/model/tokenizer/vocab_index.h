// What both tokenizers need to know about a vocabulary beyond its raw GGUF arrays: text -> id
// lookup, per-token attributes (llama.cpp's, including the fixes it applies by token text or
// model name), and the special tokens that are split out of text before tokenizing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

// Bit flags, same meaning as llama.cpp's llama_token_attr.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 7,  // swallow whitespace to the left of this special token
  kAttrRstrip = 1u << 8,  // swallow whitespace to the right of this special token
};

// Hash that lets unordered_map<std::string_view, ...> be searched without building strings.
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class VocabIndex {
 public:
  // `data` must outlive the index (keys are views into data.tokens). Fills data.eot from token
  // text when unset, like llama.cpp. Fails on duplicate token texts.
  Status build(VocabData& data, const std::string& origin);

  TokenId find(std::string_view text) const {
    auto it = text_to_id_.find(text);
    return it == text_to_id_.end() ? -1 : it->second;
  }
  uint32_t attr(TokenId id) const { return attrs_[size_t(id)]; }
  bool has_attr(TokenId id, uint32_t mask) const { return (attrs_[size_t(id)] & mask) != 0; }
  // Control, user-defined and unknown tokens, longest text first (llama.cpp's special cache).
  const std::vector<TokenId>& special_tokens() const { return special_tokens_; }
  // Tokens that end generation (EOS, EOT, EOM, FIM pad/repo/sep and the text-detected ones).
  const std::vector<TokenId>& eog_ids() const { return eog_ids_; }

 private:
  void apply_text_conventions(VocabData& data);
  void apply_model_fixes(const VocabData& data);

  std::unordered_map<std::string_view, TokenId, StringViewHash, std::equal_to<>> text_to_id_;
  std::vector<uint32_t> attrs_;
  std::vector<TokenId> special_tokens_;
  std::vector<TokenId> eog_ids_;
};

// Checks what every tokenizer relies on (array lengths, special ids in range, BOS/EOS present
// when they must be added) and replaces empty token texts with "[EMPTY_<id>]" as llama.cpp does.
Status validate_vocab(VocabData& data, const std::string& origin);

}  // namespace tandem::tokenizer
