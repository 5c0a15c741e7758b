// Writes the GGUF fuzz seed corpus: small valid files made by GgufWriter covering every value and
// tensor type, plus corrupted copies that stop at interesting places. Usage: gguf_make_corpus DIR
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/gguf/gguf.h"

namespace {

using namespace tandem;
using namespace tandem::gguf;

Value Arr(ValueType type, std::vector<Value> items) { return Value{Array{type, std::move(items)}}; }

GgufWriter::Producer Pattern(uint8_t seed) {
  return [seed](uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = uint8_t(seed + i * 13);
  };
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return bool(out);
}

bool Write(const GgufWriter& w, const std::string& path) {
  Status s = w.write(path);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.message().c_str());
  return s.ok();
}

// Offset of the first occurrence of `needle`, for patching a field after a known string.
size_t Find(const std::vector<uint8_t>& bytes, std::string_view needle) {
  auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
  return size_t(it - bytes.begin());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;

  {  // no metadata, no tensors
    GgufWriter w;
    ok &= Write(w, dir + "/empty.gguf");
  }
  {  // every metadata value type, nested arrays
    GgufWriter w;
    w.set("general.architecture", Value{std::string("llama")});
    w.set("u8", Value{uint8_t(1)});
    w.set("i8", Value{int8_t(-2)});
    w.set("u16", Value{uint16_t(3)});
    w.set("i16", Value{int16_t(-4)});
    w.set("u32", Value{uint32_t(5)});
    w.set("i32", Value{int32_t(-6)});
    w.set("f32", Value{7.5f});
    w.set("bool", Value{true});
    w.set("u64", Value{uint64_t(9)});
    w.set("i64", Value{int64_t(-10)});
    w.set("f64", Value{11.25});
    w.set("strs", Arr(ValueType::STRING, {Value{std::string("a")}, Value{std::string("bc")}}));
    w.set("bools", Arr(ValueType::BOOL, {Value{false}, Value{true}}));
    w.set("nested", Arr(ValueType::ARRAY, {Arr(ValueType::INT32, {Value{int32_t(1)}}),
                                           Arr(ValueType::INT32, {})}));
    ok &= Write(w, dir + "/all_value_types.gguf");
  }
  {  // every tensor type
    GgufWriter w;
    w.set("general.name", Value{std::string("tensors")});
    w.add_tensor("f32.weight", {4, 2}, DType::F32, Pattern(1));
    w.add_tensor("f16.weight", {3}, DType::F16, Pattern(2));
    w.add_tensor("q4_0.weight", {32, 2}, DType::Q4_0, Pattern(3));
    w.add_tensor("q8_0.weight", {32}, DType::Q8_0, Pattern(4));
    w.add_tensor("bf16.weight", {2, 1, 1, 3}, DType::BF16, Pattern(5));
    ok &= Write(w, dir + "/all_tensor_types.gguf");
  }
  {  // the block types of downloaded model files: 32-element blocks and 256-element super-blocks
    GgufWriter w;
    w.set("general.name", Value{std::string("block types")});
    w.add_tensor("q4_1.weight", {64, 2}, DType::Q4_1, Pattern(6));
    w.add_tensor("q5_0.weight", {32}, DType::Q5_0, Pattern(7));
    w.add_tensor("q5_1.weight", {32, 1}, DType::Q5_1, Pattern(8));
    w.add_tensor("iq4_nl.weight", {32, 3}, DType::IQ4_NL, Pattern(9));
    w.add_tensor("q2_k.weight", {256}, DType::Q2_K, Pattern(10));
    w.add_tensor("q3_k.weight", {256, 2}, DType::Q3_K, Pattern(11));
    w.add_tensor("q4_k.weight", {512, 1}, DType::Q4_K, Pattern(12));
    w.add_tensor("q5_k.weight", {256}, DType::Q5_K, Pattern(13));
    w.add_tensor("q6_k.weight", {256, 2}, DType::Q6_K, Pattern(14));
    w.add_tensor("iq4_xs.weight", {256}, DType::IQ4_XS, Pattern(15));
    ok &= Write(w, dir + "/k_quant_types.gguf");
  }
  {  // a tiny llama: the keys and tensor names a model loader looks for, alignment 64
    GgufWriter w;
    w.set("general.architecture", Value{std::string("llama")});
    w.set("llama.embedding_length", Value{uint32_t(8)});
    w.set("llama.block_count", Value{uint32_t(1)});
    w.set("llama.attention.head_count", Value{uint32_t(2)});
    w.set("llama.attention.layer_norm_rms_epsilon", Value{1e-5f});
    w.set_alignment(64);
    w.add_tensor("token_embd.weight", {8, 4}, DType::F32, Pattern(6));
    w.add_tensor("blk.0.attn_q.weight", {32, 8}, DType::Q8_0, Pattern(7));
    w.add_tensor("output_norm.weight", {8}, DType::F32, Pattern(8));
    ok &= Write(w, dir + "/tiny_llama_align64.gguf");
  }
  {  // a tiny gemma2 / gemma3 / phi3: the keys each architecture's description reads
    for (const char* arch : {"gemma2", "gemma3", "phi3"}) {
      const std::string p = std::string(arch) + ".";
      GgufWriter w;
      w.set("general.architecture", Value{std::string(arch)});
      w.set(p + "embedding_length", Value{uint32_t(8)});
      w.set(p + "block_count", Value{uint32_t(2)});
      w.set(p + "feed_forward_length", Value{uint32_t(16)});
      w.set(p + "attention.head_count", Value{uint32_t(2)});
      w.set(p + "attention.head_count_kv", Value{uint32_t(1)});
      w.set(p + "attention.key_length", Value{uint32_t(4)});
      w.set(p + "attention.layer_norm_rms_epsilon", Value{1e-6f});
      w.set(p + "attention.sliding_window", Value{uint32_t(3)});
      w.set(p + "attention.sliding_window_pattern", Value{uint32_t(2)});
      w.set(p + "rope.freq_base_swa", Value{10000.0f});
      w.set(p + "attn_logit_softcapping", Value{50.0f});
      w.set(p + "final_logit_softcapping", Value{30.0f});
      w.set(p + "rope.scaling.original_context_length", Value{uint32_t(16)});
      w.set(p + "rope.scaling.attn_factor", Value{1.2f});
      w.add_tensor("token_embd.weight", {8, 4}, DType::F32, Pattern(9));
      w.add_tensor("rope_factors_short.weight", {2}, DType::F32, Pattern(10));
      w.add_tensor("rope_factors_long.weight", {2}, DType::F32, Pattern(11));
      w.add_tensor("blk.0.attn_qkv.weight", {8, 16}, DType::F32, Pattern(12));
      ok &= Write(w, dir + "/tiny_" + std::string(arch) + ".gguf");
    }
  }
  {  // a tokenizer vocabulary: tokens, scores, types, merges
    GgufWriter w;
    w.set("tokenizer.ggml.model", Value{std::string("gpt2")});
    std::vector<Value> tokens, scores, types, merges;
    for (int i = 0; i < 40; ++i) {
      tokens.push_back(Value{std::string(1, char('a' + i % 26)) + std::to_string(i)});
      scores.push_back(Value{float(-i)});
      types.push_back(Value{int32_t(i < 3 ? 3 : 1)});
    }
    for (int i = 0; i < 20; ++i) merges.push_back(Value{std::string("a b") + std::to_string(i)});
    w.set("tokenizer.ggml.tokens", Arr(ValueType::STRING, tokens));
    w.set("tokenizer.ggml.scores", Arr(ValueType::FLOAT32, scores));
    w.set("tokenizer.ggml.token_type", Arr(ValueType::INT32, types));
    w.set("tokenizer.ggml.merges", Arr(ValueType::STRING, merges));
    w.set("tokenizer.ggml.add_bos_token", Value{true});
    ok &= Write(w, dir + "/vocab.gguf");
  }
  if (!ok) return 1;

  // Corrupted copies.
  const std::vector<uint8_t> tensors = ReadAll(dir + "/all_tensor_types.gguf");
  const std::vector<uint8_t> values = ReadAll(dir + "/all_value_types.gguf");
  {
    std::vector<uint8_t> cut(tensors.begin(), tensors.begin() + long(tensors.size() - 40));
    ok &= WriteAll(dir + "/bad_truncated_data.gguf", cut);
    std::vector<uint8_t> half(values.begin(), values.begin() + long(values.size() - 100));  // passes the kv count check
    ok &= WriteAll(dir + "/bad_truncated_metadata.gguf", half);
  }
  {
    std::vector<uint8_t> v2 = tensors;
    v2[4] = 2;  // v2 has the same layout: still valid
    ok &= WriteAll(dir + "/version2.gguf", v2);
  }
  {
    // The first tensor info follows its name: n_dims (4), 2 dims (16), then the type.
    std::vector<uint8_t> bad = tensors;
    const size_t type_at = Find(bad, "f32.weight") + std::strlen("f32.weight") + 4 + 16;
    bad[type_at] = 16;  // iq2_xxs: not supported
    ok &= WriteAll(dir + "/bad_tensor_type.gguf", bad);
  }
  {
    std::vector<uint8_t> bad = values;
    const size_t value_at = Find(bad, "bool") + 4 + 4;  // key, then the uint32 type, then the byte
    bad[value_at] = 2;
    ok &= WriteAll(dir + "/bad_bool.gguf", bad);
  }
  return ok ? 0 : 1;
}
