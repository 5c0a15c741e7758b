#include "test_vocabs.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>

#include "model/gguf/gguf.h"

namespace tandem::testing {

std::string vocab_dir() { return std::string(TANDEM_SHARED_DIR) + "/testdata/vocab"; }

std::string vocab_path(const std::string& name) {
  return vocab_dir() + "/ggml-vocab-" + name + ".gguf";
}

const std::vector<std::string>& conformance_vocabs() {
  static const std::vector<std::string> kNames = {"gpt-2", "llama-bpe", "llama-spm", "phi-3",
                                                  "qwen2"};
  return kNames;
}

const Tokenizer* load_vocab(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();

  auto file = gguf::GgufFile::open(vocab_path(name));
  if (!file.ok()) {
    ADD_FAILURE() << file.status().message();
    return nullptr;
  }
  auto tokenizer = Tokenizer::from_gguf(**file);
  if (!tokenizer.ok()) {
    ADD_FAILURE() << tokenizer.status().message();
    return nullptr;
  }
  return (cache[name] = std::move(tokenizer).value()).get();
}

}  // namespace tandem::testing
