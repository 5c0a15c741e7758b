// Model hyperparameters read from GGUF metadata, for the architectures tandem runs.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tandem::gguf {
class GgufFile;
}

namespace tandem {

enum class Arch { kLlama, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3 };

// How query/key pairs are rotated. Llama GGUFs store Q/K rows permuted so that rotation pairs
// are adjacent (x[2i], x[2i+1]); Qwen2 keeps the original layout and pairs x[i] with x[i+d/2].
enum class RopeStyle { kAdjacentPairs, kHalfSplit };

// The feed-forward's activation: SiLU (Llama, Qwen, Phi-3) or GELU with the tanh approximation
// (Gemma). Every supported architecture gates it: down(act(gate(x)) * up(x)).
enum class Activation { kSilu, kGeluTanh };
const char* activation_name(Activation a);

// What sets an architecture's decoder apart, read by the loader (which keys and tensors a file
// must have) and the graph builder (which ops a layer runs). Every supported architecture
// normalizes with RMSNorm. Adding an architecture is a row of kArchitectures in arch.cpp, a
// loader entry for any tensor it adds (model.cpp), and tests; a new kind of op adds it to
// graph/op.h and to each device that runs it.
struct ArchDescription {
  Arch arch;
  const char* name;          // general.architecture
  RopeStyle rope_style;      // which q/k elements rotate together
  bool qkv_bias;             // attn_{q,k,v}.bias are added after the projections
  bool qk_norm;              // attn_{q,k}_norm.weight [head_dim]: RMSNorm of each q and k head before rope
  Activation activation;     // of the gated feed-forward
  bool post_norms;           // post_attention_norm / post_ffw_norm: the block's output is normalized before the residual add
  bool embedding_scale;      // the embedding rows are multiplied by sqrt(dim) (Gemma)
  bool fused_tensors;        // attn_qkv.weight may stand for q/k/v, ffn_up.weight holds [gate; up] (Phi-3): split at load
  int swa_period;            // sliding-window layers: layer l is local when l % period < period - 1 (0: none)
  int default_window;        // the window when the file has no attention.sliding_window (0: only with the key)
  float default_attn_softcap;   // attention scores -> c*tanh(s/c) when the file has no key (0: none)
  float default_final_softcap;  // the same for the logits
  int wide_query_scale_layers;  // a model this deep scales queries by 1/sqrt(dim/heads), not 1/sqrt(head_dim) (Gemma 27B)
  bool tied_only;               // the logits always use token_embd (llama.cpp's gemma2 reads no output.weight)
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
  // LongRoPE (Phi-3 128k): rope_freq_factors are the short factors; the long ones serve a context
  // longer than the original one. rope_attn_factor multiplies cos and sin (rope.scaling.attn_factor).
  std::vector<float> rope_long_factors;
  int rope_original_context = 0;
  float rope_attn_factor = 1.0f;
  bool qkv_bias = false;         // qwen2
  bool qk_norm = false;          // qwen3, gemma3
  bool tied_embeddings = false;  // output.weight absent: logits use token_embd.weight
  Activation activation = Activation::kSilu;
  bool post_norms = false;       // gemma2, gemma3
  float embedding_scale = 1.0f;  // gemma: sqrt(dim)
  float query_scale = 0.0f;      // scores are q.k * query_scale (1/sqrt(head_dim) unless the architecture says otherwise)
  float attn_softcap = 0.0f;     // 0: none
  float final_softcap = 0.0f;    // 0: none
  int sliding_window = 0;        // keys a local layer's query sees, itself included (0: every layer global)
  int swa_period = 0;            // see ArchDescription::swa_period
  float rope_base_swa = 0.0f;    // local layers' rope base (linear scaling does not apply to them); 0: rope_base
  bool fused_qkv = false;        // the file stores attn_qkv.weight (phi3)
  bool fused_gate_up = false;    // the file stores [gate; up] as ffn_up.weight (phi3)

  int kv_dim() const { return n_kv_heads * head_dim; }
  int q_dim() const { return n_heads * head_dim; }  // the attention's width (dim unless head_dim is set apart)
  // A sliding-window layer (its keys are the last sliding_window positions).
  bool is_local_layer(int layer) const;
  // 0 for a global layer, else the window.
  int window_of_layer(int layer) const { return is_local_layer(layer) ? sliding_window : 0; }
  // Local layers rotate with their own base when the model has one (Gemma 3's 10k beside 1M).
  bool has_local_rope() const { return sliding_window > 0 && rope_base_swa > 0; }
  // Copies what the architecture's description fixes (rope style, biases, q/k norms, ...).
  void apply(const ArchDescription& d);
  std::string describe() const;  // one line for logs and `tandem info`
};

// Sets what follows from the architecture and the sizes: the embedding scale (sqrt(dim) where
// the architecture scales) and the query scale. Call after apply() and the sizes.
void finish_derived_scales(ModelConfig& c);

// Reads and checks the hyperparameters; an unknown architecture or a missing key is an error
// naming the file and the key.
Result<ModelConfig> read_model_config(const gguf::GgufFile& file);

// The llama3 rope-scaling rule: divisors for each of the head_dim/2 frequencies.
std::vector<float> llama3_rope_freq_factors(int head_dim, float rope_base, float factor,
                                            float low_freq_factor, float high_freq_factor,
                                            int original_context_length);

// How one layer rotates: base, linear scale, per-frequency divisors and the cos/sin multiplier.
struct RopeParams {
  double base = 10000.0, freq_scale = 1.0, attn_factor = 1.0;
  const std::vector<float>* factors = nullptr;  // head_dim/2 divisors, or null
};
// The rotation of global layers (local = false) or of local ones in a run of `context` positions
// (LongRoPE's long factors serve a context past the original one).
RopeParams rope_params(const ModelConfig& c, bool local, int context);

// The rotary angles of n positions starting at n_past: cos and sin tables of n rows of
// head_dim/2 values. Every fast path fills its tables here; the fp64 reference keeps its own,
// independent derivation.
void fill_rope_tables(const RopeParams& r, int head_dim, int n, int n_past, float* cos_table, float* sin_table);

std::string arch_name(Arch a);

}  // namespace tandem
