// Small generated models for the tests, written once per test binary into a temp folder.
#pragma once

#include <memory>
#include <string>

#include "core/dtype.h"
#include "model/arch.h"
#include "model/model.h"

namespace tandem::testing {

std::string repo_vocab();          // data/vocab/llama-spm.gguf
std::string shared_dir();          // ../shared
// A model of a tiny shape (dim 64, 2 layers, 4 heads, 2 kv heads; qwen3: heads of 32) in the given
// arch and type; qwen2 uses the qwen2 vocabulary, llama and qwen3 the built-in SentencePiece one.
std::string small_model_path(Arch arch, DType type, bool tied = false);
std::shared_ptr<Model> load_or_die(const std::string& path);
// A folder of this test process's own, removed when the process exits (every test runs as its
// own process under ctest, so leftovers would pile up by the thousand).
const std::string& process_temp_dir();

}  // namespace tandem::testing
