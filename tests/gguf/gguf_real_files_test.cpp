// The real files in the shared test data: the llama.cpp-converted stories260K model and the
// llama.cpp vocab files (large string arrays).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <cmath>
#include <cstring>

#include "gguf_temp_file.h"
#include "model/gguf/gguf.h"

namespace tandem::gguf {
namespace {

const std::string kShared = TANDEM_SHARED_DIR;
const std::string kModel = kShared + "/testdata/models/stories260K.gguf";

std::string Vocab(const std::string& name) { return kShared + "/testdata/vocab/ggml-vocab-" + name + ".gguf"; }

std::shared_ptr<GgufFile> OpenOrFail(const std::string& path) {
  auto r = GgufFile::open(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : nullptr;
}

TEST(GgufRealFiles, Stories260KMetadata) {
  auto f = OpenOrFail(kModel);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(*f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*f->get_int("llama.block_count"), 5);
  EXPECT_EQ(*f->get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(*f->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*f->get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(*f->get_int("llama.context_length"), 128);  // as converted (the README's 512 is llama2c's)
  EXPECT_GT(*f->get_float("llama.attention.layer_norm_rms_epsilon"), 0.0);
  const Array* tokens = *f->get_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens->type, ValueType::STRING);
  EXPECT_EQ(tokens->items.size(), 512u);
}

TEST(GgufRealFiles, Stories260KTensors) {
  auto f = OpenOrFail(kModel);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->tensors().size(), 48u);  // embd, norm, output + 5 layers x 9
  const TensorInfo* embd = f->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(embd->type, DType::F32);
  EXPECT_EQ(embd->n_bytes, 64u * 512 * 4);
  ASSERT_NE(f->find_tensor("blk.4.ffn_down.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.4.ffn_down.weight")->dims, (std::vector<uint64_t>{172, 64}));
  EXPECT_EQ(f->find_tensor("blk.5.ffn_down.weight"), nullptr);
  for (const TensorInfo& t : f->tensors()) {
    EXPECT_EQ((f->data_offset() + t.offset) % f->alignment(), 0u) << t.name;
    EXPECT_LE(f->data_offset() + t.offset + t.n_bytes, f->file_size()) << t.name;
  }
  // Trained weights: the embedding is not all zeros and has finite values.
  const float* w = reinterpret_cast<const float*>(embd->data);
  double sum_sq = 0;
  for (uint64_t i = 0; i < embd->n_elements(); ++i) sum_sq += double(w[i]) * w[i];
  EXPECT_GT(sum_sq, 1.0);
  EXPECT_TRUE(std::isfinite(sum_sq));
}

// Rewriting the llama.cpp-written model reproduces it byte for byte: the writer lays files out
// exactly as llama.cpp does.
TEST(GgufRealFiles, RewritingStories260KIsByteIdentical) {
  auto f = OpenOrFail(kModel);
  ASSERT_TRUE(f);
  GgufWriter w;
  for (const auto& [k, v] : f->metadata()) w.set(k, v);
  for (const TensorInfo& t : f->tensors()) {
    w.add_tensor(t.name, t.dims, t.type, [&t](uint8_t* dst, size_t n) {
      ASSERT_EQ(n, t.n_bytes);
      std::memcpy(dst, t.data, n);
    });
  }
  testing::TempFile tmp;
  Status s = w.write(tmp.path());
  ASSERT_TRUE(s.ok()) << s.message();
  std::ifstream a(kModel, std::ios::binary), b(tmp.path(), std::ios::binary);
  const std::vector<char> original((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
  const std::vector<char> rewritten((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
  ASSERT_EQ(original.size(), rewritten.size());
  EXPECT_TRUE(original == rewritten);
}

struct VocabCase {
  std::string name;
  std::string model;  // tokenizer.ggml.model
  size_t n_tokens;
  size_t n_merges;  // 0: no merges key (SentencePiece vocabularies)
};

class GgufVocabFiles : public ::testing::TestWithParam<VocabCase> {};

TEST_P(GgufVocabFiles, LargeStringArraysLoad) {
  const VocabCase& c = GetParam();
  auto f = OpenOrFail(Vocab(c.name));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(*f->get_string("tokenizer.ggml.model"), c.model);
  const Array* tokens = *f->get_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens->type, ValueType::STRING);
  EXPECT_EQ(tokens->items.size(), c.n_tokens);
  const Array* types = *f->get_array("tokenizer.ggml.token_type");
  EXPECT_EQ(types->type, ValueType::INT32);
  EXPECT_EQ(types->items.size(), c.n_tokens);
  if (c.n_merges) {
    const Array* merges = *f->get_array("tokenizer.ggml.merges");
    EXPECT_EQ(merges->items.size(), c.n_merges);
    EXPECT_NE(merges->items[0].as_string()->find(' '), std::string::npos) << "merges are 'a b' pairs";
  } else {
    EXPECT_EQ(f->find("tokenizer.ggml.merges"), nullptr);
    EXPECT_EQ((*f->get_array("tokenizer.ggml.scores"))->items.size(), c.n_tokens);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shared, GgufVocabFiles,
    ::testing::Values(VocabCase{"gpt-2", "gpt2", 50257, 50000}, VocabCase{"llama-bpe", "gpt2", 128256, 280147},
                      VocabCase{"llama-spm", "llama", 32000, 0}, VocabCase{"phi-3", "llama", 32064, 0},
                      VocabCase{"qwen2", "gpt2", 151936, 151387}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n) if (ch == '-') ch = '_';
      return n;
    });

TEST(GgufRealFiles, SpmVocabBoolsAndIds) {
  auto f = OpenOrFail(Vocab("llama-spm"));
  ASSERT_TRUE(f);
  EXPECT_TRUE(*f->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(*f->get_bool("tokenizer.ggml.add_eos_token"));
  EXPECT_EQ(*f->get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(*(*f->get_array("tokenizer.ggml.tokens"))->items[1].as_string(), "<s>");
}

}  // namespace
}  // namespace tandem::gguf
