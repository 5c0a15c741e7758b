// Loading rejects files that are valid GGUF but not a model tandem can run, with a message that
// names the file, the tensor or key, and the value.
#include <gtest/gtest.h>

#include <cmath>

#include <cstring>
#include <filesystem>
#include <functional>

#include "model/gguf/gguf.h"
#include "tests/model/test_models.h"

namespace tandem {
namespace {

// Copies a generated model, letting `edit` change metadata and drop or reshape tensors.
std::string rewrite(const std::string& src_path, const std::string& name,
                    const std::function<void(std::vector<std::pair<std::string, gguf::Value>>&,
                                             std::vector<gguf::TensorInfo>&)>& edit) {
  auto src = gguf::GgufFile::open(src_path);
  EXPECT_TRUE(src.ok());
  auto meta = (*src)->metadata();
  auto tensors = (*src)->tensors();
  edit(meta, tensors);
  gguf::GgufWriter w;
  for (auto& [k, v] : meta) w.set(k, v);
  for (const gguf::TensorInfo& t : tensors) {
    const gguf::TensorInfo copy = t;
    w.add_tensor(t.name, t.dims, t.type, [copy](uint8_t* dst, size_t n) {
      std::memset(dst, 0, n);
      std::memcpy(dst, copy.data, std::min<size_t>(n, copy.n_bytes));
    });
  }
  const std::string out = ::testing::TempDir() + name + ".gguf";
  EXPECT_TRUE(w.write(out).ok());
  return out;
}

std::string load_error(const std::string& path) {
  auto m = Model::load(path);
  return m.ok() ? "" : m.status().message();
}

TEST(ModelLoad, UnsupportedArchitectureIsNamed) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "arch-gpt", [](auto& meta, auto&) {
    for (auto& [k, v] : meta)
      if (k == "general.architecture") v = gguf::Value{std::string("gptneox")};
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("general.architecture"), std::string::npos) << e;
  EXPECT_NE(e.find("gptneox"), std::string::npos) << e;
}

TEST(ModelLoad, MissingTensorIsNamed) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "no-ffn-up", [](auto&, auto& t) {
    std::erase_if(t, [](const gguf::TensorInfo& x) { return x.name == "blk.1.ffn_up.weight"; });
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("blk.1.ffn_up.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
}

TEST(ModelLoad, WrongShapeIsNamedWithBothShapes) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "bad-q", [](auto&, auto& t) {
    for (auto& x : t)
      if (x.name == "blk.0.attn_q.weight") x.dims = {64, 32};
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("blk.0.attn_q.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[64, 32]"), std::string::npos) << e;
  EXPECT_NE(e.find("[64, 64]"), std::string::npos) << e;
}

TEST(ModelLoad, MissingHyperparameterIsNamed) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "no-heads", [](auto& meta, auto&) {
    std::erase_if(meta, [](const auto& kv) { return kv.first == "llama.attention.head_count"; });
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("llama.attention.head_count"), std::string::npos) << e;
}

TEST(ModelLoad, KvHeadsThatDoNotDivideHeadsAreRejected) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "kv3", [](auto& meta, auto&) {
    for (auto& [k, v] : meta)
      if (k == "llama.attention.head_count_kv") v = gguf::Value{uint32_t(3)};
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("head_count_kv"), std::string::npos) << e;
  EXPECT_NE(e.find("3"), std::string::npos) << e;
}

// One row of token_embd.weight (and of output.weight) per token, as llama.cpp requires: fewer tokens
// than rows once loaded, and `run` printed nothing (rows past the list have no text).
TEST(ModelLoad, FewerTokensThanEmbeddingRowsAreRefused) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "ten-tokens", [](auto& meta, auto&) {
    for (auto& [k, v] : meta) {
      if (k != "tokenizer.ggml.tokens" && k != "tokenizer.ggml.scores" && k != "tokenizer.ggml.token_type") continue;
      gguf::Array cut = *v.as_array();
      cut.items.resize(10);
      v = gguf::Value{std::move(cut)};
    }
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("ten-tokens.gguf: tokenizer.ggml.tokens: 10 tokens, but token_embd.weight has 32000 rows"),
            std::string::npos)
      << e;
}

TEST(ModelLoad, MoreTokensThanEmbeddingRowsAreRefused) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32, true), "short-embd", [](auto& meta, auto& t) {
    for (auto& x : t)
      if (x.name == "token_embd.weight") x.dims = {64, 31000};
    for (auto& [k, v] : meta)
      if (k == "llama.vocab_size") v = gguf::Value{uint32_t(31000)};
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("tokenizer.ggml.tokens: 32000 tokens, but token_embd.weight has 31000 rows"), std::string::npos) << e;
}

TEST(ModelLoad, OutputRowsOtherThanTheTokensAreRefused) {
  for (const uint64_t rows : {31968u, 32064u}) {
    const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "output-" + std::to_string(rows),
                                  [rows](auto&, auto& t) {
                                    for (auto& x : t)
                                      if (x.name == "output.weight") x.dims = {64, rows};
                                  });
    const std::string e = load_error(p);
    EXPECT_NE(e.find("tensor 'output.weight': " + std::to_string(rows) + " rows, but token_embd.weight has 32000"),
              std::string::npos)
        << e;
  }
}

TEST(ModelLoad, TiedEmbeddingsWhenOutputIsAbsent) {
  auto tied = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0, true));
  ASSERT_TRUE(tied);
  EXPECT_TRUE(tied->config().tied_embeddings);
  EXPECT_EQ(tied->output().data, tied->token_embd().data);
  auto untied = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0, false));
  ASSERT_TRUE(untied);
  EXPECT_FALSE(untied->config().tied_embeddings);
  EXPECT_NE(untied->output().data, untied->token_embd().data);
}

TEST(ModelLoad, Qwen2HasBiasesAndHalfSplitRope) {
  auto m = testing::load_or_die(testing::small_model_path(Arch::kQwen2, DType::F32, true));
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->config().qkv_bias);
  EXPECT_EQ(m->config().rope_style, RopeStyle::kHalfSplit);
  EXPECT_TRUE(m->layers()[0].bq.present());
  EXPECT_FLOAT_EQ(m->config().rope_base, 1000000.0f);
  EXPECT_EQ(m->config().n_vocab, m->tokenizer().n_vocab());
}

TEST(ModelLoad, Qwen3HasHeadsOfTheirOwnSizeWithNorms) {
  auto m = testing::load_or_die(testing::small_model_path(Arch::kQwen3, DType::F32, true));
  ASSERT_TRUE(m);
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.arch, Arch::kQwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.rope_style, RopeStyle::kHalfSplit);
  EXPECT_EQ(c.head_dim, 32);  // attention.key_length, not dim / heads (16)
  EXPECT_EQ(c.q_dim(), 128);
  EXPECT_EQ(m->layers()[1].wq.rows, 128);
  EXPECT_EQ(m->layers()[1].wo.cols, 128);
  EXPECT_EQ(m->layers()[1].k_norm.cols, 32);
  EXPECT_FALSE(m->layers()[1].bq.present());
}

TEST(ModelLoad, Qwen3WithoutItsQNormIsNamed) {
  const std::string p = rewrite(testing::small_model_path(Arch::kQwen3, DType::F32, true), "qwen3-no-qnorm", [](auto&, auto& t) {
    std::erase_if(t, [](const gguf::TensorInfo& x) { return x.name == "blk.0.attn_q_norm.weight"; });
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("blk.0.attn_q_norm.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
}

TEST(ModelLoad, ValueLengthApartFromKeyLengthIsRefusedByName) {
  const std::string p = rewrite(testing::small_model_path(Arch::kQwen3, DType::F32, true), "qwen3-vlen", [](auto& meta, auto&) {
    for (auto& [k, v] : meta)
      if (k == "qwen3.attention.value_length") v = gguf::Value{uint32_t(48)};
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("qwen3.attention.value_length"), std::string::npos) << e;
  EXPECT_NE(e.find("48"), std::string::npos) << e;
}

TEST(ModelLoad, UnknownArchitectureListsTheKnownOnes) {
  const std::string p = rewrite(testing::small_model_path(Arch::kLlama, DType::F32), "arch-gemma9", [](auto& meta, auto&) {
    for (auto& [k, v] : meta)
      if (k == "general.architecture") v = gguf::Value{std::string("gemma9")};
  });
  const std::string e = load_error(p);
  for (const std::string& known : arch_names()) EXPECT_NE(e.find(known), std::string::npos) << known << ": " << e;
}

TEST(ModelLoad, Llama3RopeScalingFactors) {
  // Short wavelengths are kept, long ones divided by the factor, the band between interpolated.
  const std::vector<float> f = llama3_rope_freq_factors(64, 500000.0f, 32.0f, 1.0f, 4.0f, 8192);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_FLOAT_EQ(f.front(), 1.0f);
  EXPECT_FLOAT_EQ(f.back(), 32.0f);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

// Phi-3's fused tensors are split at load into views of the same bytes: q, k, v rows of
// attn_qkv in that order, gate then up rows of ffn_up.
TEST(ModelLoad, Phi3FusedTensorsSplitIntoRowViews) {
  auto m = testing::load_or_die(testing::small_model_path(Arch::kPhi3, DType::F32));
  ASSERT_TRUE(m);
  const ModelConfig& c = m->config();
  EXPECT_TRUE(c.fused_qkv);
  EXPECT_TRUE(c.fused_gate_up);
  const LayerWeights& L = m->layers()[1];
  const gguf::TensorInfo* qkv = m->file().find_tensor("blk.1.attn_qkv.weight");
  const gguf::TensorInfo* up = m->file().find_tensor("blk.1.ffn_up.weight");
  ASSERT_TRUE(qkv && up);
  EXPECT_EQ(L.wq.data, qkv->data);
  EXPECT_EQ(L.wk.data, qkv->data + size_t(c.q_dim()) * L.wq.row_bytes());
  EXPECT_EQ(L.wv.data, L.wk.data + size_t(c.kv_dim()) * L.wk.row_bytes());
  EXPECT_EQ(L.wv.rows, c.kv_dim());
  EXPECT_EQ(L.w_gate.data, up->data);
  EXPECT_EQ(L.w_up.data, up->data + size_t(c.ffn_dim) * L.w_gate.row_bytes());
  EXPECT_EQ(L.w_up.rows, c.ffn_dim);
  EXPECT_EQ(c.rope_original_context, 32);
  EXPECT_EQ(c.rope_long_factors.size(), size_t(c.head_dim / 2));
  EXPECT_GT(c.rope_attn_factor, 1.0f);
}

TEST(ModelLoad, Phi3FusedQkvOfTheWrongHeightIsNamed) {
  const std::string p = rewrite(testing::small_model_path(Arch::kPhi3, DType::F32), "phi3-qkv", [](auto&, auto& t) {
    for (gguf::TensorInfo& x : t)
      if (x.name == "blk.0.attn_qkv.weight") x.dims[1] -= 1;
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("blk.0.attn_qkv.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("expected"), std::string::npos) << e;
}

TEST(ModelLoad, LongRopeWithoutItsLongFactorsIsNamed) {
  const std::string p = rewrite(testing::small_model_path(Arch::kPhi3, DType::F32), "phi3-nolong", [](auto&, auto& t) {
    std::erase_if(t, [](const gguf::TensorInfo& x) { return x.name == "rope_factors_long.weight"; });
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("rope_factors_long.weight"), std::string::npos) << e;
}

TEST(ModelLoad, Gemma2ReadsItsWindowCapsAndPostNorms) {
  auto m = testing::load_or_die(testing::small_model_path(Arch::kGemma2, DType::F32, true));
  ASSERT_TRUE(m);
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.activation, Activation::kGeluTanh);
  EXPECT_TRUE(c.post_norms);
  EXPECT_FLOAT_EQ(c.embedding_scale, 8.0f);  // sqrt(64)
  EXPECT_EQ(c.sliding_window, 5);
  EXPECT_FLOAT_EQ(c.attn_softcap, 1.0f);
  EXPECT_FLOAT_EQ(c.final_softcap, 2.0f);
  EXPECT_FLOAT_EQ(c.query_scale, 1.0f / std::sqrt(32.0f));  // heads of 32, not dim/heads = 16
  // Period 2: even layers local, odd ones global; one rope for both.
  EXPECT_TRUE(c.is_local_layer(0));
  EXPECT_FALSE(c.is_local_layer(1));
  EXPECT_FALSE(c.has_local_rope());
  EXPECT_TRUE(m->layers()[1].attn_post_norm.present());
  EXPECT_TRUE(m->layers()[1].ffn_post_norm.present());
}

TEST(ModelLoad, Gemma3LocalLayersRotateWithTheirOwnBase) {
  auto m = testing::load_or_die(testing::small_model_path(Arch::kGemma3, DType::F32, true));
  ASSERT_TRUE(m);
  const ModelConfig& c = m->config();
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.swa_period, 2);
  EXPECT_TRUE(c.has_local_rope());
  EXPECT_FLOAT_EQ(rope_params(c, true, 64).base, 10000.0);
  EXPECT_FLOAT_EQ(rope_params(c, false, 64).base, 1000000.0);
  EXPECT_FLOAT_EQ(c.attn_softcap, 0.0f);
}

TEST(ModelLoad, Gemma2WithoutAPostNormIsNamed) {
  const std::string p = rewrite(testing::small_model_path(Arch::kGemma2, DType::F32, true), "gemma2-nopost", [](auto&, auto& t) {
    std::erase_if(t, [](const gguf::TensorInfo& x) { return x.name == "blk.1.post_ffw_norm.weight"; });
  });
  const std::string e = load_error(p);
  EXPECT_NE(e.find("blk.1.post_ffw_norm.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
}

TEST(ModelLoad, BadGemmaKeysAreNamedWithTheirValues) {
  struct Bad {
    const char* key;
    gguf::Value value;
    const char* shows;
  };
  for (const Bad& bad : {Bad{"gemma2.attn_logit_softcapping", gguf::Value{-3.0f}, "-3"},
                         Bad{"gemma2.attention.sliding_window", gguf::Value{int32_t(-4)}, "-4"},
                         Bad{"gemma2.attention.sliding_window_pattern", gguf::Value{uint32_t(0)}, "0"}}) {
    const std::string p = rewrite(testing::small_model_path(Arch::kGemma2, DType::F32, true), "gemma2-bad", [&](auto& meta, auto&) {
      bool found = false;
      for (auto& [k, v] : meta)
        if (k == bad.key) v = bad.value, found = true;
      if (!found) meta.emplace_back(bad.key, bad.value);
    });
    const std::string e = load_error(p);
    EXPECT_NE(e.find(bad.key), std::string::npos) << e;
    EXPECT_NE(e.find(bad.shows), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace tandem
