#include "compiler/api/layer_ir.h"

#include <cstdio>

namespace tandem::compiler {

namespace {
std::string mat(long a, long b, const char* elem = "f16") {
  return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "x" + elem + ">";
}
std::string vec(long a, const char* elem = "f16") { return "tensor<" + std::to_string(a) + "x" + elem + ">"; }
std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9e", v);
  return b;
}
}  // namespace

std::string decoder_layer_mlir(const ModelConfig& c, int rows, std::string_view phase, std::string_view quant) {
  const long R = rows, D = c.dim, KV = c.kv_dim(), F = c.ffn_dim, L = c.context_length > 0 ? c.context_length : 4096;
  const std::string q = "{quant = \"" + std::string(quant) + "\"}";
  const std::string x = mat(R, D), kv = mat(R, KV), cache = mat(L, KV);
  std::string s;
  s += "// One " + c.arch_name + " decoder layer: " + std::to_string(rows) + " rows, " + std::string(phase) + ", " +
       std::string(quant) + " weights.\n";
  s += "func.func @layer_" + std::string(phase) + "_" + std::to_string(rows) + "(%x: " + x + ", %attn_norm: " + vec(D) +
       ", %wq: " + mat(D, D) + ", %wk: " + mat(KV, D) + ", %wv: " + mat(KV, D) + ", %wo: " + mat(D, D) +
       ", %ffn_norm: " + vec(D) + ", %wg: " + mat(F, D) + ", %wu: " + mat(F, D) + ", %wd: " + mat(D, F) +
       ", %pos: " + vec(R, "i32") + ", %kcache: " + cache + ", %vcache: " + cache + ", %at: index) -> " + x +
       " attributes {llm.phase = \"" + std::string(phase) + "\"} {\n";
  s += "  %n = llm.rmsnorm %x, %attn_norm {eps = " + fmt(c.rms_eps) + " : f32} : " + x + ", " + vec(D) + "\n";
  s += "  %q = llm.linear %n, %wq " + q + " : " + x + ", " + mat(D, D) + " -> " + x + "\n";
  s += "  %k = llm.linear %n, %wk " + q + " : " + x + ", " + mat(KV, D) + " -> " + kv + "\n";
  s += "  %v = llm.linear %n, %wv " + q + " : " + x + ", " + mat(KV, D) + " -> " + kv + "\n";
  const std::string rope = "{head_dim = " + std::to_string(c.head_dim) + " : i64, theta = " + fmt(c.rope_base) + " : f32}";
  s += "  %qr = llm.rope %q, %pos " + rope + " : " + x + ", " + vec(R, "i32") + "\n";
  s += "  %kr = llm.rope %k, %pos " + rope + " : " + kv + ", " + vec(R, "i32") + "\n";
  s += "  %kc = llm.kv_append %kcache, %kr at %at : " + cache + ", " + kv + "\n";
  s += "  %vc = llm.kv_append %vcache, %v at %at : " + cache + ", " + kv + "\n";
  s += "  %a = llm.attention %qr, %kc, %vc {head_dim = " + std::to_string(c.head_dim) + " : i64, num_heads = " +
       std::to_string(c.n_heads) + " : i64, num_kv_heads = " + std::to_string(c.n_kv_heads) + " : i64} : " + x + ", " +
       cache + ", " + cache + "\n";
  s += "  %o = llm.linear %a, %wo " + q + " : " + x + ", " + mat(D, D) + " -> " + x + "\n";
  s += "  %h = llm.add %x, %o : " + x + "\n";
  s += "  %m = llm.rmsnorm %h, %ffn_norm {eps = " + fmt(c.rms_eps) + " : f32} : " + x + ", " + vec(D) + "\n";
  s += "  %f = llm.mlp %m, %wg, %wu, %wd " + q + " : " + x + ", " + mat(F, D) + ", " + mat(F, D) + ", " + mat(D, F) + "\n";
  s += "  %y = llm.add %h, %f : " + x + "\n";
  s += "  return %y : " + x + "\n}\n";
  return s;
}

}  // namespace tandem::compiler
