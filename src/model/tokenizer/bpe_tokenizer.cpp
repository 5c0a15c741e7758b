#include "model/tokenizer/bpe_tokenizer.h"

#include <queue>

#include "model/tokenizer/special_tokens.h"
#include "model/tokenizer/unicode_bytes.h"

namespace tandem::tokenizer {

namespace {

struct Symbol {
  int prev;
  int next;
  size_t offset;
  size_t length;  // 0 once merged away
};

struct Bigram {
  int left;
  int right;
  int rank;
  std::string text;  // what the pair spelled when queued; a mismatch later means it is stale
};

// Lowest rank first; among equal ranks, the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> BpeTokenizer::create(VocabData data, const std::string& origin) {
  const PreTokenizerSpec* spec = find_pre_tokenizer(data.pre);
  if (spec == nullptr) {
    return Unsupported(origin + ": tokenizer.ggml.pre = '" + data.pre +
                       "' is not a supported pre-tokenizer (supported: " +
                       supported_pre_tokenizers() + ")");
  }
  auto splitter = RegexSplitter::compile(spec->regexes);
  if (!splitter.ok()) {
    return Internal(origin + ": pre-tokenizer '" + data.pre + "': " + splitter.status().message());
  }
  std::unique_ptr<BpeTokenizer> tok(
      new BpeTokenizer(std::move(data), *spec, std::move(splitter).value()));
  TANDEM_RETURN_IF_ERROR(tok->index_.build(tok->data_, origin));
  tok->eog_ids_ = tok->index_.eog_ids();
  tok->clean_spaces_ = spec->clean_spaces;

  const auto& merges = tok->data_.merges;
  tok->merge_ranks_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    // llama.cpp splits at the first space after position 0; a merge without one never applies.
    const std::string& merge = merges[rank];
    if (merge.find(' ', 1) == std::string::npos) continue;
    tok->merge_ranks_.emplace(merge, int(rank));  // the first (lowest) rank wins on duplicates
  }
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

int BpeTokenizer::merge_rank(std::string_view left, std::string_view right,
                             std::string& scratch) const {
  scratch.assign(left);
  scratch += ' ';
  scratch += right;
  auto it = merge_ranks_.find(std::string_view(scratch));
  return it == merge_ranks_.end() ? -1 : it->second;
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (spec_.ignore_merges) {
    const TokenId whole = index_.find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }

  const std::string_view view(word);
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t offset = 0; offset < word.size();) {
    const size_t length =
        std::min(utf8_sequence_length(uint8_t(word[offset])), word.size() - offset);
    const int index = int(symbols.size());
    symbols.push_back({index - 1, offset + length == word.size() ? -1 : index + 1, offset, length});
    offset += length;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  std::string scratch;
  auto text_of = [&](const Symbol& s) { return view.substr(s.offset, s.length); };
  auto add_bigram = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view l = text_of(symbols[size_t(left)]);
    const std::string_view r = text_of(symbols[size_t(right)]);
    const int rank = merge_rank(l, r, scratch);
    if (rank < 0) return;
    std::string text;
    text.reserve(l.size() + r.size());
    text.append(l).append(r);
    queue.push({left, right, rank, std::move(text)});
  };

  for (int i = 1; i < int(symbols.size()); ++i) add_bigram(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[size_t(bigram.left)];
    Symbol& right = symbols[size_t(bigram.right)];
    if (left.length == 0 || right.length == 0) continue;
    // Stale: the pair no longer spells what it did (a neighbour merged first). Symbols are
    // adjacent, so their concatenation is the contiguous run starting at left.
    if (left.length + right.length != bigram.text.size() ||
        view.substr(left.offset, bigram.text.size()) != bigram.text ||
        right.offset != left.offset + left.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[size_t(right.next)].prev = bigram.left;
    add_bigram(left.prev, bigram.left);
    add_bigram(bigram.left, left.next);
  }

  for (int i = 0; i != -1; i = symbols[size_t(i)].next) {
    const std::string_view piece = text_of(symbols[size_t(i)]);
    if (piece.empty()) continue;
    const TokenId id = index_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // No token for the merged run: llama.cpp emits any single bytes of it that are tokens.
    for (char c : piece) {
      const TokenId byte_id = index_.find(std::string_view(&c, 1));
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_special,
                                          bool parse_special) const {
  std::vector<TokenId> out;
  if (add_special && data_.add_bos && data_.bos >= 0) out.push_back(data_.bos);

  std::vector<std::string> words;
  for (const Fragment& fragment : partition_special_tokens(text, data_, index_, parse_special)) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      continue;
    }
    words.clear();
    splitter_.split(text.substr(fragment.offset, fragment.length), /*byte_encode=*/true, words);
    for (const std::string& word : words) encode_word(word, out);
  }

  if (add_special && data_.add_eos && data_.eos >= 0) out.push_back(data_.eos);
  return out;
}

std::string BpeTokenizer::token_to_piece(TokenId id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) return {};
  const uint32_t attr = index_.attr(id);
  if (!render_special && (attr & (kAttrUnknown | kAttrControl))) return {};
  const std::string& text = data_.tokens[size_t(id)];
  if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
  if (attr & kAttrNormal) {
    // Undo the byte -> printable code point mapping.
    std::string piece;
    piece.reserve(text.size());
    for (uint32_t cpt : decode_utf8_lenient(text)) {
      const int byte = unicode_to_byte(cpt);
      if (byte >= 0) {
        piece += char(byte);
      } else {
        // Not a byte stand-in (a hand-made vocabulary): llama.cpp marks it the same way.
        std::string utf8;
        append_utf8(utf8, cpt);
        piece += "[UNK_BYTE_0x";
        static constexpr char kHex[] = "0123456789abcdef";
        for (char c : utf8) {
          piece += kHex[uint8_t(c) >> 4];
          piece += kHex[uint8_t(c) & 15];
        }
        piece += text + "]";
      }
    }
    return piece;
  }
  if (attr & kAttrByte) {
    if (text.size() >= 5) return std::string(1, char(std::strtol(text.substr(3, 2).c_str(), nullptr, 16)));
    return {};
  }
  return {};
}

}  // namespace tandem::tokenizer
