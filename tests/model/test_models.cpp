#include "tests/model/test_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "model/gen_model.h"

namespace tandem::testing {

std::string repo_vocab() { return std::string(TANDEM_SOURCE_DIR) + "/data/vocab/llama-spm.gguf"; }
std::string shared_dir() { return TANDEM_SHARED_DIR; }

namespace {

struct ProcessTempDir {
  std::string path = ::testing::TempDir() + "tandem-test-" + std::to_string(::getpid());
  ProcessTempDir() { std::filesystem::create_directories(path); }
  ~ProcessTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

const std::string& process_temp_dir() {
  static const ProcessTempDir dir;
  return dir.path;
}

std::string small_model_path(Arch arch, DType type, bool tied) {
  static std::map<std::string, std::string> cache;
  const std::string key = arch_name(arch) + "-" + std::string(dtype_name(type)) + (tied ? "-tied" : "");
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const std::string path = process_temp_dir() + "/" + key + ".gguf";
  GenModelOptions o;
  o.shape = ModelShape{"test", arch, 64, 2, 4, 2, 128, 256, arch == Arch::kLlama ? 10000.0f : 1000000.0f,
                       arch == Arch::kLlama ? 1e-5f : 1e-6f, tied, 0.0f};
  // Qwen3's heads are set apart from the embedding (4 x 32 = 128 wide attention over dim 64), as
  // in Qwen3-0.6B; its vocabulary is the small built-in one (token ids are all the tests use).
  if (arch == Arch::kQwen3) o.shape.head_dim = 32;
  o.type = type;
  o.seed = 1234;
  o.n_threads = 2;
  o.vocab_path = arch == Arch::kQwen2 ? shared_dir() + "/testdata/vocab/ggml-vocab-qwen2.gguf" : repo_vocab();
  const Status st = generate_model(o, path);
  EXPECT_TRUE(st.ok()) << st.message();
  cache[key] = path;
  return path;
}

std::shared_ptr<Model> load_or_die(const std::string& path) {
  auto m = Model::load(path);
  if (!m.ok()) {
    ADD_FAILURE() << m.status().message();
    return nullptr;
  }
  return *m;
}

}  // namespace tandem::testing
