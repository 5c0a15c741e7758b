// Tokenizer::read_vocab: VocabData from a GGUF's tokenizer.ggml.* keys, with llama.cpp's
// defaults for whatever is absent.
#include <cstdint>
#include "model/gguf/gguf.h"
#include "model/tokenizer/pretokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem {

namespace {

using gguf::Array;
using gguf::GgufFile;
using gguf::Value;
using gguf::ValueType;

Status key_error(const GgufFile& file, std::string_view key, const std::string& what) {
  return InvalidArgument(file.path() + ": key '" + std::string(key) + "': " + what);
}

// An array whose elements must all have one of the accepted types.
Result<const Array*> typed_array(const GgufFile& file, std::string_view key,
                                 std::initializer_list<ValueType> accepted,
                                 std::string_view expected) {
  TANDEM_ASSIGN_OR_RETURN(const Array* array, file.get_array(key));
  for (ValueType t : accepted) {
    if (array->type == t) return array;
  }
  return key_error(file, key,
                   "expected an array of " + std::string(expected) + ", found an array of " +
                       std::string(gguf::value_type_name(array->type)));
}

Result<std::vector<std::string>> string_array(const GgufFile& file, std::string_view key) {
  TANDEM_ASSIGN_OR_RETURN(const Array* array, typed_array(file, key, {ValueType::STRING}, "string"));
  std::vector<std::string> out;
  out.reserve(array->items.size());
  for (const Value& item : array->items) {
    const std::string* s = item.as_string();
    if (s == nullptr) return key_error(file, key, "array element is not a string");
    out.push_back(*s);
  }
  return out;
}

// Reads an optional token id; absent keys leave `id` alone.
Status read_token_id(const GgufFile& file, std::string_view key, size_t n_tokens, TokenId& id) {
  if (file.find(key) == nullptr) return Status::Ok();
  TANDEM_ASSIGN_OR_RETURN(int64_t value, file.get_int(key));
  // Converters write -1 (often as the uint32 0xFFFFFFFF) for "this model has no such token";
  // llama.cpp reads that as absent, and so do we.
  if (value == -1 || value == int64_t(UINT32_MAX)) {
    id = -1;
    return Status::Ok();
  }
  if (value < 0 || uint64_t(value) >= n_tokens) {
    return OutOfRange(file.path() + ": key '" + std::string(key) + "': token id " +
                      std::to_string(value) + " is outside the vocabulary of " +
                      std::to_string(n_tokens) + " tokens");
  }
  id = TokenId(value);
  return Status::Ok();
}

Status read_flag(const GgufFile& file, std::string_view key, bool& flag) {
  if (file.find(key) == nullptr) return Status::Ok();
  TANDEM_ASSIGN_OR_RETURN(flag, file.get_bool(key));
  return Status::Ok();
}

Status check_length(const GgufFile& file, std::string_view key, size_t n, size_t n_tokens) {
  if (n == n_tokens) return Status::Ok();
  return key_error(file, key,
                   "has " + std::to_string(n) + " entries but tokenizer.ggml.tokens has " +
                       std::to_string(n_tokens));
}

}  // namespace

Result<VocabData> Tokenizer::read_vocab(const GgufFile& file) {
  VocabData data;
  TANDEM_ASSIGN_OR_RETURN(data.model, file.get_string("tokenizer.ggml.model"));
  if (file.find("tokenizer.ggml.pre") != nullptr) {
    TANDEM_ASSIGN_OR_RETURN(data.pre, file.get_string("tokenizer.ggml.pre"));
  }
  if (file.find("general.name") != nullptr) {
    TANDEM_ASSIGN_OR_RETURN(data.model_name, file.get_string("general.name"));
  }

  // llama.cpp's defaults per model type, before the keys override them.
  if (data.model == "llama") {
    data.bos = 1;
    data.eos = 2;
    data.unk = 0;
    data.add_bos = true;
    data.add_eos = false;
    data.add_space_prefix = true;
  } else if (data.model == "gpt2") {
    const tokenizer::PreTokenizerSpec* spec = tokenizer::find_pre_tokenizer(data.pre);
    if (spec == nullptr) {
      return Unsupported(file.path() + ": key 'tokenizer.ggml.pre': '" + data.pre +
                         "' is not a supported pre-tokenizer (supported: " +
                         tokenizer::supported_pre_tokenizers() + ")");
    }
    data.bos = spec->has_default_bos ? 11 : -1;  // GPT-NeoX's <|endoftext|>, as llama.cpp assumes
    data.eos = 11;
    data.add_bos = spec->add_bos;
    data.add_eos = false;
    data.add_space_prefix = false;
  } else {
    return Unsupported(file.path() + ": key 'tokenizer.ggml.model': '" + data.model +
                       "' is not supported (supported: 'llama' SentencePiece, 'gpt2' byte-level BPE)");
  }

  TANDEM_ASSIGN_OR_RETURN(data.tokens, string_array(file, "tokenizer.ggml.tokens"));
  const size_t n_tokens = data.tokens.size();
  if (n_tokens == 0) return key_error(file, "tokenizer.ggml.tokens", "is empty");

  if (file.find("tokenizer.ggml.scores") != nullptr) {
    TANDEM_ASSIGN_OR_RETURN(const Array* scores,
                            typed_array(file, "tokenizer.ggml.scores",
                                        {ValueType::FLOAT32, ValueType::INT32}, "float32"));
    TANDEM_RETURN_IF_ERROR(check_length(file, "tokenizer.ggml.scores", scores->items.size(), n_tokens));
    data.scores.reserve(n_tokens);
    for (const Value& item : scores->items) {
      if (auto f = item.as_float()) {
        data.scores.push_back(float(*f));
      } else if (auto i = item.as_int()) {
        data.scores.push_back(float(*i));
      } else {
        return key_error(file, "tokenizer.ggml.scores", "array element is not a number");
      }
    }
  }

  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    TANDEM_ASSIGN_OR_RETURN(const Array* types,
                            typed_array(file, "tokenizer.ggml.token_type", {ValueType::INT32}, "int32"));
    TANDEM_RETURN_IF_ERROR(check_length(file, "tokenizer.ggml.token_type", types->items.size(), n_tokens));
    data.token_types.reserve(n_tokens);
    for (const Value& item : types->items) {
      const auto type = item.as_int();
      if (!type) return key_error(file, "tokenizer.ggml.token_type", "array element is not an integer");
      data.token_types.push_back(int32_t(*type));
    }
  }

  if (data.model == "gpt2") {
    if (file.find("tokenizer.ggml.merges") == nullptr) {
      return NotFound(file.path() + ": key 'tokenizer.ggml.merges': missing (a gpt2 tokenizer needs its merges)");
    }
    TANDEM_ASSIGN_OR_RETURN(data.merges, string_array(file, "tokenizer.ggml.merges"));
  }

  // Defaults that point past the vocabulary are dropped, as llama.cpp does; explicit ids must fit.
  for (TokenId* id : {&data.bos, &data.eos, &data.unk}) {
    if (*id >= 0 && size_t(*id) >= n_tokens) *id = -1;
  }
  TANDEM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.bos_token_id", n_tokens, data.bos));
  TANDEM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.eos_token_id", n_tokens, data.eos));
  TANDEM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.unknown_token_id", n_tokens, data.unk));
  TANDEM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.padding_token_id", n_tokens, data.pad));
  TANDEM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.eot_token_id", n_tokens, data.eot));

  TANDEM_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_bos_token", data.add_bos));
  TANDEM_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_eos_token", data.add_eos));
  TANDEM_RETURN_IF_ERROR(read_flag(file, "tokenizer.ggml.add_space_prefix", data.add_space_prefix));

  if (data.add_bos && data.bos < 0) {
    return key_error(file, "tokenizer.ggml.add_bos_token", "is true, but tokenizer.ggml.bos_token_id is not set");
  }
  if (data.add_eos && data.eos < 0) {
    return key_error(file, "tokenizer.ggml.add_eos_token", "is true, but tokenizer.ggml.eos_token_id is not set");
  }
  return data;
}

}  // namespace tandem
