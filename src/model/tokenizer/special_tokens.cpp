#include "model/tokenizer/special_tokens.h"

#include <cctype>

namespace tandem::tokenizer {

namespace {

// C-locale isspace on one byte; bytes >= 0x80 (UTF-8 pieces) are never whitespace here.
bool is_ascii_space(char c) { return uint8_t(c) < 0x80 && std::isspace(uint8_t(c)); }

// Splits one raw fragment on every occurrence of `piece`, appending the results to `out`.
void split_fragment(std::string_view text, const Fragment& raw, std::string_view piece, TokenId id,
                    uint32_t attr, std::vector<Fragment>& out) {
  size_t pos = raw.offset;
  const size_t end = raw.offset + raw.length;
  const std::string_view window = text.substr(0, end);
  while (pos < end) {
    const size_t match = window.find(piece, pos);
    if (match == std::string_view::npos) {
      out.push_back({-1, pos, end - pos});
      return;
    }
    size_t left_length = match - pos;
    if (attr & kAttrLstrip) {
      while (left_length > 0 && is_ascii_space(text[pos + left_length - 1])) --left_length;
    }
    if (left_length > 0) out.push_back({-1, pos, left_length});
    out.push_back({id, match, piece.size()});
    pos = match + piece.size();
    if (attr & kAttrRstrip) {
      while (pos < end && is_ascii_space(text[pos])) ++pos;
    }
  }
}

}  // namespace

std::vector<Fragment> partition_special_tokens(std::string_view text, const VocabData& data,
                                               const VocabIndex& index, bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, 0, text.size()});

  std::vector<Fragment> next;
  for (TokenId id : index.special_tokens()) {
    const uint32_t attr = index.attr(id);
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view piece = data.tokens[size_t(id)];
    // Cheap reject: most special tokens do not occur at all.
    if (text.find(piece) == std::string_view::npos) continue;

    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token >= 0) {
        next.push_back(fragment);
      } else {
        split_fragment(text, fragment, piece, id, attr, next);
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace tandem::tokenizer
