// tandem quantize: llama-quantize's per-tensor rules, the rewritten file, and (where llama.cpp's
// own llama-quantize has been built, ../shared/anchors/build-llamacpp.sh) byte equality with it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

#include "core/quant.h"
#include "model/gen_model.h"
#include "model/gguf/gguf.h"
#include "model/model.h"
#include "model/quantize/quantize.h"
#include "model/quantize/quantize_rules.h"
#include "tests/model/test_models.h"

namespace tandem {
namespace {

// A llama's tensors in file order: n layers of 2048-wide rows (1-D norms between).
std::vector<TensorShape> llama_tensors(int layers, uint64_t row = 2048, bool tied = false) {
  std::vector<TensorShape> t{{"token_embd.weight", {row, 32000}, DType::F32}};
  for (int l = 0; l < layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    t.push_back({b + "attn_norm.weight", {row}, DType::F32});
    for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"})
      t.push_back({b + n + ".weight", {row, row}, DType::F32});
    t.push_back({b + "ffn_down.weight", {row, row}, DType::F32});
    t.push_back({b + "ffn_norm.weight", {row}, DType::F32});
  }
  t.push_back({"output_norm.weight", {row}, DType::F32});
  if (!tied) t.push_back({"output.weight", {row, 32000}, DType::F32});
  return t;
}

std::map<std::string, DType> types_by_name(const std::vector<TensorShape>& t, const std::vector<DType>& types) {
  std::map<std::string, DType> m;
  for (size_t i = 0; i < t.size(); ++i) m[t[i].name] = types[i];
  return m;
}

QuantizeTarget target(const std::string& name) {
  auto t = parse_quantize_target(name);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return *t;
}

// Q4_K_M on 8 layers: use_more_bits picks layers 0, 3, 6 and 7 (first and last eighth, every third
// between) for Q6_K attn_v and ffn_down; the output is Q6_K, norms stay f32, the rest Q4_K.
TEST(QuantizeRules, Q4_K_MUpgradesTheLayersLlamaCppDoes) {
  const auto t = llama_tensors(8);
  const auto m = types_by_name(t, choose_tensor_types(t, target("q4_k_m"), false, 8, 4));
  for (int l = 0; l < 8; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const DType more = (l == 0 || l == 3 || l == 6 || l == 7) ? DType::Q6_K : DType::Q4_K;
    EXPECT_EQ(m.at(b + "attn_v.weight"), more) << l;
    EXPECT_EQ(m.at(b + "ffn_down.weight"), more) << l;
    EXPECT_EQ(m.at(b + "attn_q.weight"), DType::Q4_K) << l;
    EXPECT_EQ(m.at(b + "ffn_up.weight"), DType::Q4_K) << l;
    EXPECT_EQ(m.at(b + "attn_norm.weight"), DType::F32) << l;
  }
  EXPECT_EQ(m.at("output.weight"), DType::Q6_K);
  EXPECT_EQ(m.at("token_embd.weight"), DType::Q4_K);
  EXPECT_EQ(target("q4_k_m").file_type, 15u);
}

TEST(QuantizeRules, OtherMixesAndTiedEmbeddings) {
  const auto t = llama_tensors(16, 2048, true);
  // Q2_K: attn_v Q4_K with 4+ heads per KV head (else Q3_K), attn_output and ffn_down Q3_K, and
  // the tied embedding is the output projection: Q6_K.
  auto m = types_by_name(t, choose_tensor_types(t, target("q2_k"), false, 16, 4));
  EXPECT_EQ(m.at("blk.5.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(m.at("blk.5.attn_output.weight"), DType::Q3_K);
  EXPECT_EQ(m.at("blk.5.ffn_down.weight"), DType::Q3_K);
  EXPECT_EQ(m.at("blk.5.ffn_gate.weight"), DType::Q2_K);
  EXPECT_EQ(m.at("token_embd.weight"), DType::Q6_K);
  m = types_by_name(t, choose_tensor_types(t, target("q2_k"), false, 16, 2));
  EXPECT_EQ(m.at("blk.5.attn_v.weight"), DType::Q3_K);
  // Q3_K_M: the first two attn_v Q5_K then Q4_K; ffn_down Q5_K below n/16 then Q4_K; attn_output Q4_K.
  m = types_by_name(t, choose_tensor_types(t, target("q3_k_m"), false, 16, 4));
  EXPECT_EQ(m.at("blk.1.attn_v.weight"), DType::Q5_K);
  EXPECT_EQ(m.at("blk.2.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(m.at("blk.0.ffn_down.weight"), DType::Q5_K);
  EXPECT_EQ(m.at("blk.1.ffn_down.weight"), DType::Q4_K);
  EXPECT_EQ(m.at("blk.9.attn_output.weight"), DType::Q4_K);
  // Q4_K_S: attn_v of the first four layers and ffn_down of the first eighth in Q5_K.
  m = types_by_name(t, choose_tensor_types(t, target("q4_k_s"), false, 16, 4));
  EXPECT_EQ(m.at("blk.3.attn_v.weight"), DType::Q5_K);
  EXPECT_EQ(m.at("blk.4.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(m.at("blk.1.ffn_down.weight"), DType::Q5_K);
  EXPECT_EQ(m.at("blk.2.ffn_down.weight"), DType::Q4_K);
  // q4_k is llama-quantize's alias of Q4_K_M.
  EXPECT_EQ(target("Q4_K").file_type, target("q4_k_m").file_type);
}

TEST(QuantizeRules, PureAndRowFallbacks) {
  const auto t = llama_tensors(4);
  auto m = types_by_name(t, choose_tensor_types(t, target("q4_k_m"), true, 4, 4));
  EXPECT_EQ(m.at("blk.0.attn_v.weight"), DType::Q4_K);
  EXPECT_EQ(m.at("output.weight"), DType::Q4_K);
  EXPECT_EQ(m.at("output_norm.weight"), DType::F32);
  // Rows of 2080 (a multiple of 32, not of 256): each K type falls back as llama.cpp's does.
  const auto odd = llama_tensors(2, 2080);
  for (auto [name, want] : {std::pair{"q4_k", DType::Q5_0}, std::pair{"q5_k", DType::Q5_1}, std::pair{"q6_k", DType::Q8_0},
                            std::pair{"q2_k", DType::Q4_0}, std::pair{"q3_k", DType::Q4_0}, std::pair{"iq4_xs", DType::IQ4_NL}}) {
    m = types_by_name(odd, choose_tensor_types(odd, target(name), true, 2, 1));
    EXPECT_EQ(m.at("blk.1.ffn_up.weight"), want) << name;
  }
  // Rows of 40: not even a 32-block: f16.
  const auto tiny = llama_tensors(1, 40);
  EXPECT_EQ(types_by_name(tiny, choose_tensor_types(tiny, target("q4_0"), true, 1, 1)).at("blk.0.attn_q.weight"), DType::F16);
  EXPECT_FALSE(parse_quantize_target("q4_k_x").ok());
  EXPECT_NE(parse_quantize_target("iq2_xxs").status().message().find("q4_k_m"), std::string::npos);
}

// The written file: loads, carries the chosen types, and `f32` out of a quantized file is its exact
// dequantization; quantizing to the type a tensor has copies it.
TEST(Quantize, RewritesTheFileAndDequantizesExactly) {
  const std::string dir = testing::process_temp_dir();
  GenModelOptions g;
  g.shape = ModelShape{"test", Arch::kLlama, 256, 2, 4, 1, 512, 256, 10000.0f, 1e-5f, false, 0.0f};
  g.vocab_path = testing::repo_vocab();
  const std::string f32 = dir + "/quantize-src.gguf", q = dir + "/quantize-q4_k_m.gguf", back = dir + "/quantize-back.gguf";
  ASSERT_TRUE(generate_model(g, f32).ok());
  QuantizeOptions o;
  auto s = quantize_model(f32, q, "q4_k_m", o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto qm = Model::load(q);
  ASSERT_TRUE(qm.ok()) << qm.status().message();
  auto qf = gguf::GgufFile::open(q);
  ASSERT_TRUE(qf.ok());
  EXPECT_EQ(*(*qf)->get_int("general.file_type"), 15);
  std::vector<TensorShape> shapes;
  for (const auto& t : (*qf)->tensors()) shapes.push_back({t.name, t.dims, DType::F32});
  const std::vector<DType> want = choose_tensor_types(shapes, target("q4_k_m"), false, 2, 4);
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ((*qf)->tensors()[i].type, want[i]) << shapes[i].name;

  ASSERT_TRUE(quantize_model(q, back, "f32", o).ok());
  auto bf = gguf::GgufFile::open(back);
  ASSERT_TRUE(bf.ok());
  for (const auto& t : (*qf)->tensors()) {
    const gguf::TensorInfo* b = (*bf)->find_tensor(t.name);
    ASSERT_TRUE(b && b->type == DType::F32) << t.name;
    std::vector<float> deq(t.n_elements());
    const size_t row = t.dims[0], rb = row_bytes(t.type, row);
    for (size_t r = 0; r < t.n_elements() / row; ++r) dequantize_row(t.type, t.data + r * rb, deq.data() + r * row, row);
    ASSERT_EQ(std::memcmp(deq.data(), b->data, deq.size() * 4), 0) << t.name;
  }
  // Quantizing to the types it already has copies every tensor.
  auto again = quantize_model(q, dir + "/quantize-again.gguf", "q4_k_m", o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->converted, 0);
  EXPECT_FALSE(quantize_model(q, q, "q4_0", o).ok());  // never over its own input
}

// gen-model with a mix writes what `tandem quantize` makes of the same model drawn in f32: the
// same per-tensor types and bytes.
TEST(Quantize, GenModelWithAMixEqualsQuantizingItsF32Draw) {
  const std::string dir = testing::process_temp_dir();
  GenModelOptions g;
  g.shape = ModelShape{"test", Arch::kLlama, 256, 8, 8, 2, 512, 256, 10000.0f, 1e-5f, false, 0.0f};
  g.vocab_path = testing::repo_vocab();
  const std::string f32 = dir + "/mix-f32.gguf", direct = dir + "/mix-direct.gguf", via = dir + "/mix-via.gguf";
  ASSERT_TRUE(generate_model(g, f32).ok());
  g.mix = target("q4_k_m");
  g.type = g.mix->base;
  ASSERT_TRUE(generate_model(g, direct).ok());
  ASSERT_TRUE(quantize_model(f32, via, "q4_k_m", {}).ok());
  auto a = gguf::GgufFile::open(direct), b = gguf::GgufFile::open(via);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*(*a)->get_int("general.file_type"), 15);
  int q6 = 0;
  for (const auto& t : (*a)->tensors()) {
    const gguf::TensorInfo* u = (*b)->find_tensor(t.name);
    ASSERT_TRUE(u && u->type == t.type) << t.name;
    ASSERT_EQ(std::memcmp(t.data, u->data, t.n_bytes), 0) << t.name;
    q6 += t.type == DType::Q6_K;
  }
  EXPECT_EQ(q6, 1 + 4 + 4);  // output, and attn_v and ffn_down of layers 0, 3, 6, 7
}

// Byte equality with llama.cpp's llama-quantize on the same f32 file, by tensor name (llama.cpp
// writes them in its own order). Skips without the native build.
TEST(Quantize, TensorsAreByteIdenticalToLlamaQuantize) {
  const std::string bin = "/tmp/llcpp/build/bin/llama-quantize";
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << "no " << bin << " (../shared/anchors/build-llamacpp.sh builds it)";
  const std::string dir = testing::process_temp_dir();
  GenModelOptions g;
  g.shape = ModelShape{"test", Arch::kLlama, 256, 8, 8, 2, 768, 256, 10000.0f, 1e-5f, false, 0.0f};
  g.vocab_path = testing::repo_vocab();
  const std::string src = dir + "/lq-src.gguf";
  ASSERT_TRUE(generate_model(g, src).ok());
  for (const char* type : {"q4_k_m", "q5_k_m", "q3_k_m", "q2_k", "q6_k", "iq4_xs", "q4_1", "q5_0"}) {
    std::string upper = type;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    const std::string ours = dir + "/lq-t-" + type + ".gguf", theirs = dir + "/lq-l-" + type + ".gguf";
    ASSERT_TRUE(quantize_model(src, ours, type, {}).ok()) << type;
    const std::string cmd = "LD_LIBRARY_PATH=/tmp/llcpp/build/bin " + bin + " " + src + " " + theirs + " " + upper + " 2 >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto a = gguf::GgufFile::open(ours), b = gguf::GgufFile::open(theirs);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
    EXPECT_EQ(*(*a)->get_int("general.file_type"), *(*b)->get_int("general.file_type")) << type;
    for (const auto& t : (*a)->tensors()) {
      const gguf::TensorInfo* u = (*b)->find_tensor(t.name);
      ASSERT_TRUE(u) << type << " " << t.name;
      ASSERT_EQ(t.type, u->type) << type << " " << t.name;
      ASSERT_EQ(std::memcmp(t.data, u->data, t.n_bytes), 0) << type << " " << t.name;
    }
  }
}

}  // namespace
}  // namespace tandem
