// Tokenizer construction (dispatch on the model type) and the shared detokenizer.
#include "model/tokenizer/tokenizer.h"

#include "model/gguf/gguf.h"
#include "model/tokenizer/bpe_tokenizer.h"
#include "model/tokenizer/spm_tokenizer.h"
#include "model/tokenizer/vocab_index.h"

namespace tandem {

namespace {

Result<std::unique_ptr<Tokenizer>> create_from(VocabData data, const std::string& origin) {
  TANDEM_RETURN_IF_ERROR(tokenizer::validate_vocab(data, origin));
  if (data.model == "llama") return tokenizer::SpmTokenizer::create(std::move(data), origin);
  if (data.model == "gpt2") return tokenizer::BpeTokenizer::create(std::move(data), origin);
  return Unsupported(origin + ": tokenizer.ggml.model = '" + data.model +
                     "' is not supported (supported: 'llama' SentencePiece, 'gpt2' byte-level BPE)");
}

// llama.cpp's detokenizer clean-up for BPE vocabularies that ask for it: drop the space before
// ? ! . , and around a lone apostrophe, and before the contractions 's 'm 're 've.
std::string clean_up_spaces(const std::string& in) {
  if (in.empty()) return in;
  // Pass 1: " ?", " !", " .", " ,".
  std::string a(1, in[0]);
  for (size_t i = 1; i < in.size(); ++i) {
    const char c = in[i];
    if (in[i - 1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ',')) a.pop_back();
    a += c;
  }
  // Pass 2: " ' " becomes "'". The consumed right-hand space reads as NUL to the next step, as
  // in llama.cpp's in-place version.
  std::string src = a;
  std::string b(1, src[0]);
  for (size_t i = 1; i < src.size(); ++i) {
    const char c = src[i];
    if (c == '\'' && i + 1 < src.size() && src[i - 1] == ' ' && src[i + 1] == ' ') {
      b.pop_back();
      src[++i] = '\0';
    }
    b += c;
  }
  // Pass 3: " 's", " 'm", " 're", " 've" lose their space (" 't", " 'd", " 'll" keep it).
  std::string out(1, b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    const char c = b[i];
    if (b[i - 1] == ' ' && c == '\'' && i + 1 < b.size()) {
      const char c1 = b[i + 1];
      if (c1 == 's' || c1 == 'm') {
        out.pop_back();
      } else if (c1 != 't' && c1 != 'd' && i + 2 < b.size()) {
        const char c2 = b[i + 2];
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e')) out.pop_back();
      }
    }
    out += c;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(VocabData data) {
  return create_from(std::move(data), "vocabulary");
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  TANDEM_ASSIGN_OR_RETURN(VocabData data, read_vocab(file));
  return create_from(std::move(data), file.path());
}

Status Tokenizer::check_ids(std::span<const TokenId> ids, std::string_view what) const {
  for (TokenId id : ids) {
    if (id >= 0 && id < n_vocab()) continue;
    return InvalidArgument(std::string(what) + ": " + std::to_string(id) + " is outside the vocabulary of " +
                           std::to_string(n_vocab()) + " tokens (0.." + std::to_string(n_vocab() - 1) + ")");
  }
  return Status::Ok();
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool render_special) const {
  std::string text;
  // SentencePiece's prefix space is not part of the text.
  bool strip_leading_space = data_.add_space_prefix;
  for (TokenId id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (strip_leading_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    strip_leading_space = false;
    text += piece;
  }
  return clean_spaces_ ? clean_up_spaces(text) : text;
}

}  // namespace tandem
