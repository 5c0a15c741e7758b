// Model hyperparameters read from GGUF metadata, for the architectures tandem runs.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tandem::gguf {
class GgufFile;
}

namespace tandem {

enum class Arch { kLlama, kQwen2, kQwen3 };

// How query/key pairs are rotated. Llama GGUFs store Q/K rows permuted so that rotation pairs
// are adjacent (x[2i], x[2i+1]); Qwen2 keeps the original layout and pairs x[i] with x[i+d/2].
enum class RopeStyle { kAdjacentPairs, kHalfSplit };

// What sets an architecture's decoder apart, read by the loader (which keys and tensors a file
// must have) and the graph builder (which ops a layer runs). Adding an architecture is a row of
// kArchitectures in arch.cpp, a loader entry for any tensor it adds (model.cpp), and tests.
struct ArchDescription {
  Arch arch;
  const char* name;      // general.architecture
  RopeStyle rope_style;  // which q/k elements rotate together
  bool qkv_bias;         // attn_{q,k,v}.bias are added after the projections
  bool qk_norm;          // attn_{q,k}_norm.weight [head_dim]: RMSNorm of each q and k head before rope
};
// The description of a known architecture; null for an unknown one.
const ArchDescription* find_arch(const std::string& name);
const ArchDescription& describe_arch(Arch a);
std::vector<std::string> arch_names();  // every known general.architecture
std::string arch_name_list();           // the same, for messages: "llama, qwen2, qwen3"

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string arch_name;  // general.architecture
  std::string name;       // general.name, if present
  int n_vocab = 0;
  int dim = 0;            // embedding_length
  int n_layers = 0;       // block_count
  int n_heads = 0;        // attention.head_count
  int n_kv_heads = 0;     // attention.head_count_kv (grouped-query attention when < n_heads)
  int head_dim = 0;       // attention.key_length, else dim / n_heads
  int ffn_dim = 0;        // feed_forward_length
  int context_length = 0;
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  RopeStyle rope_style = RopeStyle::kAdjacentPairs;
  // Per-frequency divisors (llama3 rope scaling, or rope_freqs.weight); empty means all 1.
  std::vector<float> rope_freq_factors;
  float rope_freq_scale = 1.0f;  // linear rope scaling: positions are multiplied by this
  bool qkv_bias = false;         // qwen2
  bool qk_norm = false;          // qwen3
  bool tied_embeddings = false;  // output.weight absent: logits use token_embd.weight

  int kv_dim() const { return n_kv_heads * head_dim; }
  int q_dim() const { return n_heads * head_dim; }  // the attention's width (dim unless head_dim is set apart)
  // Copies what the architecture's description fixes (rope style, biases, q/k norms).
  void apply(const ArchDescription& d);
  std::string describe() const;  // one line for logs and `tandem info`
};

// Reads and checks the hyperparameters; an unknown architecture or a missing key is an error
// naming the file and the key.
Result<ModelConfig> read_model_config(const gguf::GgufFile& file);

// The llama3 rope-scaling rule: divisors for each of the head_dim/2 frequencies.
std::vector<float> llama3_rope_freq_factors(int head_dim, float rope_base, float factor,
                                            float low_freq_factor, float high_freq_factor,
                                            int original_context_length);

// The rotary angles of n positions starting at n_past: cos and sin tables of n rows of
// head_dim/2 values (rope base, freq factors and linear scaling applied). Every fast path fills
// its tables here; the fp64 reference keeps its own, independent derivation.
void fill_rope_tables(const ModelConfig& c, int n, int n_past, float* cos_table, float* sin_table);

std::string arch_name(Arch a);

}  // namespace tandem
