// Which type each tensor of a model gets when it is quantized: llama-quantize's rules without an
// importance matrix, so `tandem quantize IN OUT q4_k_m` writes the same types (and, the quantizers
// being ggml's bit for bit, the same bytes) as `llama-quantize IN OUT Q4_K_M`.
//
// A target is a weight type (q4_0 ... iq4_xs, f32, f16, bf16) or one of llama.cpp's mixes (q2_k,
// q3_k_s/m, q4_k_s/m, q5_k_s/m), each of which is a base type plus per-tensor upgrades: the
// output projection in Q6_K, attn_v and some ffn_down layers a step above the base (the ones
// use_more_bits picks), attn_output and ffn_down of Q2_K in Q3_K, ... q3_k, q4_k and q5_k are
// aliases of the "_M" mixes, as in llama-quantize. --pure skips the upgrades: every
// quantizable tensor gets the base type. Either way a row not a multiple of the type's block falls
// back as llama.cpp does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0,
// IQ4_XS -> IQ4_NL; f16 if even that does not fit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace tandem {

struct QuantizeTarget {
  std::string name;    // as given, lower case: "q4_k_m", "iq4_xs", "f16"
  DType base;          // the mix's base type
  uint32_t file_type;  // GGUF general.file_type (llama.cpp's llama_ftype)
};

// "q4_k_m", "Q4_K_M", "q6_k", "f16", ... The error lists every accepted name.
Result<QuantizeTarget> parse_quantize_target(const std::string& name);
std::string quantize_target_names();  // for help texts

// One tensor as the rules see it: its name, ggml dims (dims[0] the row length) and stored type.
struct TensorShape {
  std::string name;
  std::vector<uint64_t> dims;
  DType type;
};

// The type each tensor is written in, in file order (the layer counters of the rules follow it).
// n_layers: the model's block count (the ffn_down rules' "layer of n"); n_gqa: query heads per KV
// head (Q2_K's and IQ4's attn_v rules). Tensors llama-quantize leaves alone (1-D, norms, names not
// ending in "weight") keep their type.
std::vector<DType> choose_tensor_types(const std::vector<TensorShape>& tensors, const QuantizeTarget& target, bool pure,
                                       int n_layers, int n_gqa);

}  // namespace tandem
