#include "model/tokenizer/vocab_index.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tandem::tokenizer {

namespace {

uint32_t attr_from_type(int32_t type) {
  switch (TokenType(type)) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    default: return kAttrUndefined;  // llama.cpp maps unknown type values to "undefined" too
  }
}

// Token texts llama.cpp uses to find special tokens that converters did not label. Order is our
// priority when a vocabulary has several (llama.cpp takes whichever its hash map yields first).
constexpr std::array<std::string_view, 11> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "<end_of_utterance>"};
constexpr std::array<std::string_view, 1> kEomTexts = {"<|eom_id|>"};
constexpr std::array<std::string_view, 8> kFimPreTexts = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
    "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::array<std::string_view, 8> kFimSufTexts = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
    "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::array<std::string_view, 8> kFimMidTexts = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>",
    "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::array<std::string_view, 5> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>",
                                                          "<PAD>", "[PAD]"};
constexpr std::array<std::string_view, 5> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>",
                                                          "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::array<std::string_view, 1> kFimSepTexts = {"<|file_sep|>"};
constexpr std::array<std::string_view, 22> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~["};

std::string lowercase(std::string s) {
  for (char& c : s) c = char(std::tolower(uint8_t(c)));
  return s;
}

Status check_id(TokenId id, const char* key, size_t n_tokens, const std::string& origin) {
  if (id < -1 || (id >= 0 && size_t(id) >= n_tokens)) {
    return OutOfRange(origin + ": " + key + " = " + std::to_string(id) +
                      " is outside the vocabulary of " + std::to_string(n_tokens) + " tokens");
  }
  return Status::Ok();
}

}  // namespace

Status validate_vocab(VocabData& data, const std::string& origin) {
  const size_t n = data.tokens.size();
  if (n == 0) return InvalidArgument(origin + ": tokenizer.ggml.tokens is empty");
  if (!data.scores.empty() && data.scores.size() != n) {
    return InvalidArgument(origin + ": tokenizer.ggml.scores has " +
                           std::to_string(data.scores.size()) + " entries, tokenizer.ggml.tokens has " +
                           std::to_string(n));
  }
  if (!data.token_types.empty() && data.token_types.size() != n) {
    return InvalidArgument(origin + ": tokenizer.ggml.token_type has " +
                           std::to_string(data.token_types.size()) +
                           " entries, tokenizer.ggml.tokens has " + std::to_string(n));
  }
  TANDEM_RETURN_IF_ERROR(check_id(data.bos, "tokenizer.ggml.bos_token_id", n, origin));
  TANDEM_RETURN_IF_ERROR(check_id(data.eos, "tokenizer.ggml.eos_token_id", n, origin));
  TANDEM_RETURN_IF_ERROR(check_id(data.unk, "tokenizer.ggml.unknown_token_id", n, origin));
  TANDEM_RETURN_IF_ERROR(check_id(data.pad, "tokenizer.ggml.padding_token_id", n, origin));
  TANDEM_RETURN_IF_ERROR(check_id(data.eot, "tokenizer.ggml.eot_token_id", n, origin));
  if (data.add_bos && data.bos < 0) {
    return InvalidArgument(origin + ": tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set");
  }
  if (data.add_eos && data.eos < 0) {
    return InvalidArgument(origin + ": tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set");
  }
  for (size_t i = 0; i < n; ++i) {
    if (data.tokens[i].empty()) data.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";
  }
  return Status::Ok();
}

Status VocabIndex::build(VocabData& data, const std::string& origin) {
  const size_t n = data.tokens.size();
  text_to_id_.clear();
  text_to_id_.reserve(n);
  attrs_.assign(n, kAttrNormal);
  special_tokens_.clear();
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = text_to_id_.emplace(std::string_view(data.tokens[i]), TokenId(i));
    if (!inserted) {
      return InvalidArgument(origin + ": duplicate token in tokenizer.ggml.tokens: '" +
                             data.tokens[i] + "' has ids " + std::to_string(it->second) + " and " +
                             std::to_string(i));
    }
    if (!data.token_types.empty()) attrs_[i] = attr_from_type(data.token_types[i]);
  }

  apply_text_conventions(data);

  for (size_t i = 0; i < n; ++i) {
    if (attrs_[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      special_tokens_.push_back(TokenId(i));
    }
  }
  // Longest first, so "<|im_start|>" is split out before any shorter token it contains.
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [&](TokenId a, TokenId b) {
    return data.tokens[size_t(a)].size() > data.tokens[size_t(b)].size();
  });

  apply_model_fixes(data);
  return Status::Ok();
}

// llama.cpp's load-time conventions keyed on token text: find EOT/EOM/FIM tokens the metadata
// did not name, and treat end-of-generation tokens as control tokens (which changes how text
// that spells them is tokenized with parse_special = false).
void VocabIndex::apply_text_conventions(VocabData& data) {
  auto detect = [&](auto texts, TokenId& id) {
    if (id >= 0) return;
    for (std::string_view text : texts) {
      const TokenId found = find(text);
      if (found >= 0) {
        id = found;
        attrs_[size_t(found)] |= kAttrControl;
        return;
      }
    }
  };
  TokenId eom = -1, fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1,
          fim_sep = -1;
  detect(kEotTexts, data.eot);
  detect(kEomTexts, eom);
  detect(kFimPreTexts, fim_pre);
  detect(kFimSufTexts, fim_suf);
  detect(kFimMidTexts, fim_mid);
  detect(kFimPadTexts, fim_pad);
  detect(kFimRepTexts, fim_rep);
  detect(kFimSepTexts, fim_sep);

  // Tokens whose text says "unused" are unused even when typed as control.
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if ((attrs_[i] & kAttrControl) && data.tokens[i].find("unused") != std::string::npos) {
      attrs_[i] |= kAttrUnused;
    }
  }

  eog_ids_.clear();
  auto add_eog = [&](TokenId id) {
    if (id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) == eog_ids_.end()) {
      eog_ids_.push_back(id);
    }
  };
  add_eog(fim_pad);
  add_eog(fim_rep);
  add_eog(fim_sep);
  for (std::string_view text : kEogTexts) {
    const TokenId id = find(text);
    if (id >= 0) {
      add_eog(id);
      attrs_[size_t(id)] |= kAttrControl;
    }
  }
  // gpt-oss renders its channel markers, so llama.cpp makes them user-defined.
  for (std::string_view text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    const TokenId id = find(text);
    if (id >= 0) attrs_[size_t(id)] = kAttrUserDefined;
  }
  add_eog(data.eos);
  add_eog(data.eot);
  add_eog(eom);

  // o200k_harmony / solar-open: "<|end|>" separates messages there and must not stop generation.
  auto in_eog = [&](std::string_view text) {
    const TokenId id = find(text);
    return id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
  };
  const bool has_call = in_eog("<|call|>") || in_eog("<|calls|>");
  if (in_eog("<|end|>") && has_call && (in_eog("<|return|>") || in_eog("<|flush|>"))) {
    const TokenId end_id = find("<|end|>");
    std::erase(eog_ids_, end_id);
    attrs_[size_t(end_id)] = kAttrUserDefined;
  }
  // gemma4 / paddleocr: "</s>" is an ordinary token next to "<|tool_response>".
  if (in_eog("<|tool_response>") && in_eog("</s>")) {
    const TokenId s_id = find("</s>");
    std::erase(eog_ids_, s_id);
    attrs_[size_t(s_id)] = kAttrNormal;
  }
}

// Per-model strip attributes llama.cpp sets from the model name or pre-tokenizer name (the GGUF
// has no field for them).
void VocabIndex::apply_model_fixes(const VocabData& data) {
  const std::string name = lowercase(data.model_name);
  auto set = [&](std::string_view text, uint32_t attr, bool on) {
    const TokenId id = find(text);
    if (id < 0) return;
    if (on) {
      attrs_[size_t(id)] |= attr;
    } else {
      attrs_[size_t(id)] &= ~attr;
    }
  };
  auto contains = [](const std::string& s, std::string_view needle) {
    return s.find(needle) != std::string::npos;
  };
  if (contains(data.pre, "jina-v2-de") || contains(data.pre, "jina-v2-es") ||
      contains(data.pre, "jina-v2-code")) {
    set("<mask>", kAttrLstrip, true);
  } else if (contains(name, "phi-3") || contains(name, "phi3")) {
    for (TokenId id : special_tokens_) attrs_[size_t(id)] |= kAttrRstrip;
    set("</s>", kAttrRstrip, true);
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) set(text, kAttrRstrip, false);
  } else if (contains(name, "modern-bert")) {
    set("[MASK]", kAttrLstrip, true);
  }
}

}  // namespace tandem::tokenizer
