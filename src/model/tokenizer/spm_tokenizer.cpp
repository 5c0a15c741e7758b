#include "model/tokenizer/spm_tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <queue>
#include <unordered_map>

#include "model/tokenizer/special_tokens.h"
#include "model/tokenizer/unicode_bytes.h"

namespace tandem::tokenizer {

namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// A run of text inside the session's string; merged symbols absorb their right neighbour.
struct SpmSymbol {
  int prev;
  int next;
  size_t offset;
  size_t length;  // 0 once merged away
};

struct SpmBigram {
  int left;
  int right;
  float score;
  size_t length;
};

// Highest score first; among equal scores, the leftmost pair (SentencePiece's order).
struct SpmBigramOrder {
  bool operator()(const SpmBigram& a, const SpmBigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out += kEscapedSpace;
    } else {
      out += c;
    }
  }
  return out;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out += to;
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> SpmTokenizer::create(VocabData data, const std::string& origin) {
  std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(std::move(data)));
  TANDEM_RETURN_IF_ERROR(tok->index_.build(tok->data_, origin));
  tok->eog_ids_ = tok->index_.eog_ids();
  tok->clean_spaces_ = false;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    tok->byte_tokens_[b] = tok->index_.find(name);
  }
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

void SpmTokenizer::append_byte(uint8_t byte, std::vector<TokenId>& out) const {
  TokenId id = byte_tokens_[byte];
  if (id < 0) id = index_.find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
  if (id < 0) id = data_.unk;  // llama.cpp would abort here; <unk> is the honest stand-in
  if (id >= 0) out.push_back(id);
}

void SpmTokenizer::encode_escaped(const std::string& text, std::vector<TokenId>& out) const {
  // One symbol per UTF-8 character (by lead byte, as llama.cpp counts them).
  std::vector<SpmSymbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t length =
        std::min(utf8_sequence_length(uint8_t(text[offset])), text.size() - offset);
    const int index = int(symbols.size());
    symbols.push_back({index - 1, offset + length == text.size() ? -1 : index + 1, offset, length});
    offset += length;
  }
  if (symbols.empty()) return;

  std::priority_queue<SpmBigram, std::vector<SpmBigram>, SpmBigramOrder> queue;
  // Which two symbols last formed a given text: resegmentation walks back through these.
  std::unordered_map<std::string_view, std::pair<int, int>> formed_by;
  const std::string_view view(text);

  auto try_add_bigram = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged =
        view.substr(symbols[size_t(left)].offset, symbols[size_t(left)].length + symbols[size_t(right)].length);
    const TokenId id = index_.find(merged);
    if (id < 0) return;
    const float score = data_.scores.empty() ? 0.0f : data_.scores[size_t(id)];
    queue.push({left, right, score, merged.size()});
    formed_by[merged] = {left, right};
  };

  for (int i = 1; i < int(symbols.size()); ++i) try_add_bigram(i - 1, i);

  while (!queue.empty()) {
    const SpmBigram bigram = queue.top();
    queue.pop();
    SpmSymbol& left = symbols[size_t(bigram.left)];
    SpmSymbol& right = symbols[size_t(bigram.right)];
    // Stale entry: one side was merged elsewhere since this pair was queued.
    if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[size_t(right.next)].prev = bigram.left;
    try_add_bigram(left.prev, bigram.left);
    try_add_bigram(bigram.left, left.next);
  }

  // Symbols that are not tokens fall back to the pieces they were merged from, then to bytes.
  auto resegment = [&](auto&& self, const SpmSymbol& symbol) -> void {
    const std::string_view piece = view.substr(symbol.offset, symbol.length);
    const TokenId id = index_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    auto it = formed_by.find(piece);
    if (it == formed_by.end()) {
      for (char c : piece) append_byte(uint8_t(c), out);
      return;
    }
    self(self, symbols[size_t(it->second.first)]);
    self(self, symbols[size_t(it->second.second)]);
  };
  for (int i = 0; i != -1; i = symbols[size_t(i)].next) resegment(resegment, symbols[size_t(i)]);
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<TokenId> out;
  const bool add_bos = add_special && data_.add_bos && data_.bos >= 0;
  if (add_bos) out.push_back(data_.bos);

  // SentencePiece prepends a space to the text, and llama.cpp again after every special token.
  bool after_special = true;
  for (const Fragment& fragment : partition_special_tokens(text, data_, index_, parse_special)) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_special = true;
      continue;
    }
    // Built in one step: GCC 12 warns (-Wrestrict, a false positive) on assign-then-append.
    const bool prefix = data_.add_space_prefix && after_special;
    std::string piece(prefix ? 1 : 0, ' ');
    piece.append(text.substr(fragment.offset, fragment.length));
    encode_escaped(escape_spaces(piece), out);
    after_special = false;
  }

  if (add_special && data_.add_eos && data_.eos >= 0) out.push_back(data_.eos);
  return out;
}

std::string SpmTokenizer::token_to_piece(TokenId id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) return {};
  const uint32_t attr = index_.attr(id);
  if (!render_special && (attr & (kAttrUnknown | kAttrControl))) return {};
  const std::string& text = data_.tokens[size_t(id)];
  if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
  if (attr & kAttrNormal) {
    std::string piece = text;
    replace_all(piece, kEscapedSpace, " ");
    return piece;
  }
  if (attr & kAttrByte) {
    // "<0xXX>"
    if (text.size() >= 5) return std::string(1, char(std::strtol(text.substr(3, 2).c_str(), nullptr, 16)));
    return {};
  }
  return {};  // unused / undefined tokens render as nothing, as in llama.cpp
}

}  // namespace tandem::tokenizer
