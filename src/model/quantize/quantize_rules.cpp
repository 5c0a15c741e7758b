#include "model/quantize/quantize_rules.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tandem {
namespace {

// llama.cpp's llama_ftype values (GGUF general.file_type) of the targets tandem writes.
enum FileType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 7, kQ5_0 = 8, kQ5_1 = 9, kQ2_K = 10, kQ3_K_S = 11,
  kQ3_K_M = 12, kQ3_K_L = 13, kQ4_K_S = 14, kQ4_K_M = 15, kQ5_K_S = 16, kQ5_K_M = 17, kQ6_K = 18,
  kIQ4_NL = 25, kIQ4_XS = 30, kBF16 = 32,
};

struct TargetRow {
  const char* name;
  DType base;
  FileType file_type;
};

constexpr std::array<TargetRow, 22> kTargets = {{
    {"f32", DType::F32, kF32},         {"f16", DType::F16, kF16},          {"bf16", DType::BF16, kBF16},
    {"q4_0", DType::Q4_0, kQ4_0},      {"q4_1", DType::Q4_1, kQ4_1},       {"q5_0", DType::Q5_0, kQ5_0},
    {"q5_1", DType::Q5_1, kQ5_1},      {"q8_0", DType::Q8_0, kQ8_0},       {"q2_k", DType::Q2_K, kQ2_K},
    {"q3_k", DType::Q3_K, kQ3_K_M},    {"q3_k_s", DType::Q3_K, kQ3_K_S},   {"q3_k_m", DType::Q3_K, kQ3_K_M},
    {"q3_k_l", DType::Q3_K, kQ3_K_L},  {"q4_k", DType::Q4_K, kQ4_K_M},     {"q4_k_s", DType::Q4_K, kQ4_K_S},
    {"q4_k_m", DType::Q4_K, kQ4_K_M},  {"q5_k", DType::Q5_K, kQ5_K_M},     {"q5_k_s", DType::Q5_K, kQ5_K_S},
    {"q5_k_m", DType::Q5_K, kQ5_K_M},  {"q6_k", DType::Q6_K, kQ6_K},       {"iq4_nl", DType::IQ4_NL, kIQ4_NL},
    {"iq4_xs", DType::IQ4_XS, kIQ4_XS},
}};

enum class Category { kOutput, kTokenEmbd, kAttnQkv, kAttnV, kAttnK, kAttnQ, kAttnOutput, kFfnUp, kFfnGate, kFfnDown, kOther };

// By name, in llama.cpp's order of tests (attn_qkv before attn_v; "ffn_up" matches any ffn_up*).
Category category_of(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight") return Category::kTokenEmbd;
  if (has("attn_qkv.weight")) return Category::kAttnQkv;
  if (has("attn_v.weight")) return Category::kAttnV;
  if (has("attn_k.weight")) return Category::kAttnK;
  if (has("attn_q.weight")) return Category::kAttnQ;
  if (has("attn_output.weight")) return Category::kAttnOutput;
  if (has("ffn_up")) return Category::kFfnUp;
  if (has("ffn_gate")) return Category::kFfnGate;
  if (has("ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// The fused qkv counts as attn_v: both are "attention-v-like" (the most sensitive to quantization).
bool attn_v_like(Category c) { return c == Category::kAttnV || c == Category::kAttnQkv; }

// Whether llama-quantize quantizes the tensor at all: 2-D (or more), a "weight", not a norm.
bool quantizable(const TensorShape& t) {
  if (t.dims.size() < 2) return false;
  const std::string& n = t.name;
  if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
  return n.find("_norm.weight") == std::string::npos;
}

// The layers that get more bits in the _M mixes: the first and last eighth and every third between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

struct Counters {
  int attn_v = 0, n_attn_v = 0;  // attention-v-like tensors seen so far, and in the model
  int ffn_down = 0, n_layers = 0;
  bool tied = true;              // no output.weight: token_embd is also the output projection
  int n_gqa = 1;                 // heads per KV head (the Q2_K and IQ4 attn_v rules)
};

// llama.cpp's per-tensor upgrade of a mix, for the file types tandem writes.
DType upgrade(const TensorShape& t, Category c, DType type, uint32_t ft, Counters& n) {
  if (c == Category::kOutput || (n.tied && c == Category::kTokenEmbd)) {
    if (t.dims[0] % dtype_traits(type).block_size != 0) return DType::Q8_0;
    return type == DType::Q8_0 ? type : DType::Q6_K;
  }
  if (c == Category::kTokenEmbd) return type;
  if (attn_v_like(c)) {
    const int i = n.attn_v++;
    if (ft == kQ2_K) return n.n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
    if (ft == kQ3_K_M) return i < 2 ? DType::Q5_K : DType::Q4_K;
    if (ft == kQ3_K_L) return DType::Q5_K;
    if ((ft == kIQ4_NL || ft == kIQ4_XS) && n.n_gqa >= 4) return DType::Q5_K;
    if ((ft == kQ4_K_M || ft == kQ5_K_M) && use_more_bits(i, n.n_attn_v)) return DType::Q6_K;
    if (ft == kQ4_K_S && i < 4) return DType::Q5_K;
    return type;
  }
  if (c == Category::kFfnDown) {
    const int i = n.ffn_down++, layers = n.n_layers;
    if (ft == kQ2_K) return DType::Q3_K;
    if (ft == kQ3_K_M) return i < layers / 16 ? DType::Q5_K : DType::Q4_K;
    if (ft == kQ3_K_L) return DType::Q5_K;
    if (ft == kQ4_K_M) return use_more_bits(i, layers) ? DType::Q6_K : type;
    if (i < layers / 8 && (ft == kIQ4_NL || ft == kIQ4_XS)) return DType::Q5_K;
    if (ft == kQ5_K_M && use_more_bits(i, layers)) return DType::Q6_K;
    if (ft == kQ4_K_S && i < layers / 8) return DType::Q5_K;
    return type;
  }
  if (c == Category::kAttnOutput) {
    if (ft == kQ2_K) return DType::Q3_K;
    if (ft == kQ3_K_M) return DType::Q4_K;
    if (ft == kQ3_K_L) return DType::Q5_K;
  }
  return type;
}

// A type whose block does not divide the row length falls back as llama.cpp's does.
DType fit_row(DType type, uint64_t row) {
  if (row % dtype_traits(type).block_size == 0) return type;
  DType f = type;
  switch (type) {
    case DType::IQ4_XS: f = DType::IQ4_NL; break;
    case DType::Q2_K:
    case DType::Q3_K: f = DType::Q4_0; break;
    case DType::Q4_K: f = DType::Q5_0; break;
    case DType::Q5_K: f = DType::Q5_1; break;
    case DType::Q6_K: f = DType::Q8_0; break;
    default: break;
  }
  return row % dtype_traits(f).block_size == 0 ? f : DType::F16;
}

}  // namespace

std::string quantize_target_names() {
  std::string s;
  for (const TargetRow& t : kTargets) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

Result<QuantizeTarget> parse_quantize_target(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const TargetRow& t : kTargets)
    if (lower == t.name) return QuantizeTarget{lower, t.base, t.file_type};
  return InvalidArgument("quantize: type '" + name + "' is not one tandem writes (" + quantize_target_names() + ")");
}

std::vector<DType> choose_tensor_types(const std::vector<TensorShape>& tensors, const QuantizeTarget& target, bool pure,
                                       int n_layers, int n_gqa) {
  Counters n;
  n.n_layers = n_layers;
  n.n_gqa = std::max(1, n_gqa);
  for (const TensorShape& t : tensors) {
    const Category c = category_of(t.name);
    if (attn_v_like(c)) ++n.n_attn_v;
    if (c == Category::kOutput) n.tied = false;
  }
  std::vector<DType> out;
  out.reserve(tensors.size());
  for (const TensorShape& t : tensors) {
    if (!quantizable(t)) {
      out.push_back(t.type);
      continue;
    }
    DType type = target.base;
    // The rules only refine quantized targets; f32/f16/bf16 go to every quantizable tensor as is.
    if (is_block_quantized(type)) {
      if (!pure) type = upgrade(t, category_of(t.name), type, target.file_type, n);
      type = fit_row(type, t.dims[0]);
    }
    out.push_back(type);
  }
  return out;
}

}  // namespace tandem
