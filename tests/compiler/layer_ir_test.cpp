// The compiler's layer is the runtime's decoder: built with OpBuilder from graph::build_forward's
// op list, it carries every op and attribute of that list (norms and their eps, biases, rope style
// and base, head counts), and compiles.
#include <gtest/gtest.h>

#include <string>

#include "compiler/api/layer_ir.h"
#include "compiler/api/npu_compiler.h"

namespace tandem::compiler {
namespace {

ModelConfig config(Arch arch) {
  ModelConfig c;
  c.arch = arch;
  c.arch_name = arch_name(arch);
  c.n_vocab = 256;
  c.dim = 128;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 32;
  c.ffn_dim = 256;
  c.context_length = 64;
  c.rms_eps = 1e-6f;
  c.rope_base = 1000000.0f;
  c.rope_style = arch == Arch::kQwen2 ? RopeStyle::kHalfSplit : RopeStyle::kAdjacentPairs;
  c.qkv_bias = arch == Arch::kQwen2;
  return c;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LayerIr, EveryOpOfTheDecoderWithItsAttributes) {
  auto ir = decoder_layer_mlir(config(Arch::kLlama), 8, "prefill", "q4_0");
  ASSERT_TRUE(ir.ok()) << ir.status().message();
  const std::string& t = *ir;
  EXPECT_EQ(count(t, "llm.rmsnorm"), 2) << t;
  EXPECT_EQ(count(t, "llm.linear"), 7) << t;  // q, k, v, o, gate, up, down
  EXPECT_EQ(count(t, "{quant = \"q4_0\"}"), 7) << t;
  EXPECT_EQ(count(t, "llm.rope"), 2) << t;
  EXPECT_EQ(count(t, "llm.kv_append"), 2) << t;
  EXPECT_EQ(count(t, "llm.attention"), 1) << t;
  EXPECT_EQ(count(t, "num_heads = 4 : i64, num_kv_heads = 2 : i64"), 1) << t;
  EXPECT_EQ(count(t, "llm.add"), 2) << t;
  EXPECT_EQ(count(t, "llm.swiglu"), 1) << t;
  EXPECT_EQ(count(t, "llm.bias_add"), 0) << t;
  EXPECT_EQ(count(t, "half_split"), 0) << t;  // llama pairs adjacent elements (the default style)
  EXPECT_EQ(count(t, "eps = 9.99999997E-7 : f32"), 2) << t;
  EXPECT_EQ(count(t, "theta = 1.000000e+06 : f32"), 2) << t;
  EXPECT_EQ(count(t, "tensor<64x64xf16>, tensor<8x64xf16>"), 2) << "k and v appended to the 64-position caches\n" << t;
  EXPECT_NE(t.find("llm.phase = \"prefill\""), std::string::npos) << t;
}

TEST(LayerIr, Qwen2KeepsItsBiasesAndRopeStyle) {
  auto ir = decoder_layer_mlir(config(Arch::kQwen2), 1, "decode", "f16");
  ASSERT_TRUE(ir.ok()) << ir.status().message();
  EXPECT_EQ(count(*ir, "llm.bias_add"), 3) << *ir;
  EXPECT_EQ(count(*ir, "tensor<1x128xf16>, tensor<128xf16>"), 3) << "q bias and the two norms\n" << *ir;
  EXPECT_EQ(count(*ir, "tensor<1x64xf16>, tensor<64xf16>"), 2) << "k and v biases\n" << *ir;
  EXPECT_EQ(count(*ir, "style = \"half_split\""), 2) << *ir;
}

TEST(LayerIr, Qwen3HeadsApartFromTheEmbeddingWithTheirNorms) {
  ModelConfig c = config(Arch::kQwen2);
  c.apply(describe_arch(Arch::kQwen3));
  c.head_dim = 64;  // 4 heads of 64: a 256-wide attention over the 128 embedding
  c.ffn_dim = 384;  // so that only the output projection reads 256 columns
  auto ir = decoder_layer_mlir(c, 8, "prefill", "q8_0");
  ASSERT_TRUE(ir.ok()) << ir.status().message();
  EXPECT_EQ(count(*ir, "llm.head_norm"), 2) << *ir;
  EXPECT_EQ(count(*ir, "head_dim = 64 : i64} : tensor<8x256xf16>, tensor<64xf16>"), 1) << "q's norm\n" << *ir;
  EXPECT_EQ(count(*ir, "head_dim = 64 : i64} : tensor<8x128xf16>, tensor<64xf16>"), 1) << "k's norm\n" << *ir;
  EXPECT_EQ(count(*ir, "llm.bias_add"), 0) << *ir;
  EXPECT_EQ(count(*ir, "tensor<8x256xf16>, tensor<128x256xf16> -> tensor<8x128xf16>"), 1) << "the output projection\n" << *ir;
  auto m = compile_layer(c, 8, "prefill", "q8_0", {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  int norms = 0;
  for (const FallbackOp& f : m->fallbacks) norms += f.op == "llm.head_norm";
  EXPECT_EQ(norms, 2);
}

TEST(LayerIr, CompilesWithBiasesLeavingTheNpu) {
  auto m = compile_layer(config(Arch::kQwen2), 8, "prefill", "q8_0", {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  int matmuls = 0, biases = 0, ropes = 0;
  for (const CompiledProgram& p : m->programs) matmuls += p.kind == CompiledProgram::Kind::kMatmul;
  for (const FallbackOp& f : m->fallbacks) {
    biases += f.op == "llm.bias_add";
    ropes += f.op == "llm.rope";
  }
  EXPECT_EQ(matmuls, 7);
  EXPECT_EQ(biases, 3);
  EXPECT_EQ(ropes, 2);
}

TEST(LayerIr, RefusesAStorageFormatWithoutAnLlmForm) {
  auto ir = decoder_layer_mlir(config(Arch::kLlama), 8, "prefill", "bf16");
  ASSERT_FALSE(ir.ok());
  EXPECT_NE(ir.status().message().find("'bf16'"), std::string::npos) << ir.status().message();
}

}  // namespace
}  // namespace tandem::compiler
