// Shared fixtures: the conformance vocabularies under TANDEM_SHARED_DIR, each loaded once.
#pragma once

#include <string>
#include <vector>

#include "model/tokenizer/tokenizer.h"

namespace tandem::testing {

std::string vocab_dir();
std::string vocab_path(const std::string& name);  // "llama-bpe" -> .../ggml-vocab-llama-bpe.gguf
// The five vocabularies the conformance files cover.
const std::vector<std::string>& conformance_vocabs();
// Loaded once per process; fails the calling test (and returns nullptr) if it cannot be.
const Tokenizer* load_vocab(const std::string& name);

}  // namespace tandem::testing
