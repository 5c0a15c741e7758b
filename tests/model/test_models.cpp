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
  // Gemma: heads of 32 (wider than dim/heads, as Gemma's 256 over 2304), a window of 5 that a
  // 19-token prompt crosses, and for gemma3 a local layer (base 10k) then a global one (1M).
  if (arch == Arch::kGemma2 || arch == Arch::kGemma3) {
    o.shape.head_dim = 32;
    o.shape.sliding_window = 5;
    o.shape.rms_eps = 1e-6f;
  }
  if (arch == Arch::kGemma3) o.shape.swa_period = 2;
  // Caps that bite at this model's scale (its scores and logits are a few units; 50 and 30 would
  // leave them untouched and a device that skipped the caps would pass).
  if (arch == Arch::kGemma2) o.shape.attn_softcap = 1.0f, o.shape.final_softcap = 2.0f;
  // Phi-3 with LongRoPE: an original context of 32 below the tests' runs, so the long factors serve.
  if (arch == Arch::kPhi3) o.shape.longrope_original_context = 32;
  o.type = type;
  o.seed = 1234;
  o.n_threads = 2;
  // Types of 256-element blocks (the K-quants, IQ4_XS) need rows of 256: a 256-wide model, heads of
  // 64 (q_dim 256 is attn_output's row) and an ffn of 512.
  // Their vocabulary is cut to 2048 tokens: a 32000 x 256 embedding and output made these models'
  // quantization and reference forward most of the model tests' time (the 64-wide models keep the
  // full 32000 rows).
  if (dtype_traits(type).block_size == 256) {
    o.shape.dim = 256;
    o.shape.ffn_dim = 512;
    if (o.shape.head_dim > 0) o.shape.head_dim = 64;
    o.vocab_limit = 2048;
  }
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
