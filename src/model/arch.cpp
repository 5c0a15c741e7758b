#include "model/arch.h"

#include <cmath>
#include <cstdio>
#include <numbers>
#include <sstream>

#include "model/gguf/gguf.h"
#include "model/gguf/gguf_value_io.h"

namespace tandem {
namespace {

// Llama GGUFs store q/k rows permuted for adjacent-pair rotation (llama.cpp's converter); the
// others keep the original layout and rotate halves (NEOX style). Gemma's defaults (window 4096,
// soft-caps 50 and 30, the 27B query scale) are gemma_pytorch's config, which llama.cpp also
// assumes when a file lacks the keys; Phi-3's sliding window is ignored, as llama.cpp does.
constexpr ArchDescription kArchitectures[] = {
    // arch          name      rope style                bias   qknorm activation            post   embsc  fused  swa window softcaps   wide-q tied-only
    {Arch::kLlama,  "llama",  RopeStyle::kAdjacentPairs, false, false, Activation::kSilu,     false, false, false, 0, 0,    0.0f, 0.0f,  0, false},
    {Arch::kQwen2,  "qwen2",  RopeStyle::kHalfSplit,     true,  false, Activation::kSilu,     false, false, false, 0, 0,    0.0f, 0.0f,  0, false},
    {Arch::kQwen3,  "qwen3",  RopeStyle::kHalfSplit,     false, true,  Activation::kSilu,     false, false, false, 0, 0,    0.0f, 0.0f,  0, false},
    {Arch::kPhi3,   "phi3",   RopeStyle::kHalfSplit,     false, false, Activation::kSilu,     false, false, true,  0, 0,    0.0f, 0.0f,  0, false},
    {Arch::kGemma2, "gemma2", RopeStyle::kHalfSplit,     false, false, Activation::kGeluTanh, true,  true,  false, 2, 4096, 50.0f, 30.0f, 46, true},
    {Arch::kGemma3, "gemma3", RopeStyle::kHalfSplit,     false, true,  Activation::kGeluTanh, true,  true,  false, 6, 0,    0.0f, 0.0f,  62, false},
};

// Gemma 3's local layers rotate with base 10k unless the file says otherwise (rope.freq_base_swa).
constexpr float kGemma3LocalRopeBase = 10000.0f;

Result<double> float_key(const gguf::GgufFile& f, const std::string& key, double lo, double hi) {
  TANDEM_ASSIGN_OR_RETURN(double v, f.get_float(key));
  if (!(v >= lo && v <= hi)) {
    return InvalidArgument(f.path() + ": " + key + ": value " + std::to_string(v) + " is out of range (" +
                           std::to_string(lo) + ".." + std::to_string(hi) + ")");
  }
  return v;
}

// A [n] f32 tensor of rope divisors (rope_freqs, rope_factors_long/short), every value > 0.
Result<std::vector<float>> rope_factor_tensor(const gguf::GgufFile& f, const gguf::TensorInfo& t, const std::string& name,
                                              int n) {
  if (t.type != DType::F32 || t.n_elements() != uint64_t(n)) {
    return InvalidArgument(f.path() + ": tensor '" + name + "': expected " + std::to_string(n) + " f32 values");
  }
  const float* v = reinterpret_cast<const float*>(t.data);
  for (int i = 0; i < n; ++i) {
    if (!(v[i] > 0) || !std::isfinite(v[i])) {
      return InvalidArgument(f.path() + ": tensor '" + name + "': value " + std::to_string(v[i]) + " at " +
                             std::to_string(i) + " is not a positive divisor");
    }
  }
  return std::vector<float>(v, v + n);
}

Result<int> positive_int(const gguf::GgufFile& f, const std::string& key, int64_t max_value) {
  TANDEM_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  if (v <= 0 || v > max_value) {
    return InvalidArgument(f.path() + ": " + key + ": value " + std::to_string(v) +
                           " is out of range (1.." + std::to_string(max_value) + ")");
  }
  return int(v);
}

}  // namespace

const ArchDescription* find_arch(const std::string& name) {
  for (const ArchDescription& d : kArchitectures)
    if (name == d.name) return &d;
  return nullptr;
}

const ArchDescription& describe_arch(Arch a) {
  for (const ArchDescription& d : kArchitectures)
    if (d.arch == a) return d;
  return kArchitectures[0];  // unreachable: every Arch has a row
}

std::vector<std::string> arch_names() {
  std::vector<std::string> out;
  for (const ArchDescription& d : kArchitectures) out.push_back(d.name);
  return out;
}

std::string arch_name_list() {
  std::string out;
  for (const std::string& n : arch_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string arch_name(Arch a) { return describe_arch(a).name; }

const char* activation_name(Activation a) { return a == Activation::kSilu ? "silu" : "gelu_tanh"; }

void ModelConfig::apply(const ArchDescription& d) {
  arch = d.arch;
  arch_name = d.name;
  rope_style = d.rope_style;
  qkv_bias = d.qkv_bias;
  qk_norm = d.qk_norm;
  activation = d.activation;
  post_norms = d.post_norms;
  swa_period = d.swa_period;
  sliding_window = d.default_window;
  attn_softcap = d.default_attn_softcap;
  final_softcap = d.default_final_softcap;
  rope_base_swa = d.arch == Arch::kGemma3 ? kGemma3LocalRopeBase : 0.0f;
  // The scales that depend on sizes are set by finish_derived_scales() once the sizes are known.
}

bool ModelConfig::is_local_layer(int layer) const {
  // llama.cpp's pattern: of every `period` layers the last is global (period 1 or 0: all local).
  if (sliding_window <= 0) return false;
  return swa_period <= 1 || layer % swa_period < swa_period - 1;
}

void finish_derived_scales(ModelConfig& c) {
  const ArchDescription& d = describe_arch(c.arch);
  c.embedding_scale = d.embedding_scale ? float(std::sqrt(double(c.dim))) : 1.0f;
  const bool wide = d.wide_query_scale_layers > 0 && c.n_layers == d.wide_query_scale_layers && c.dim >= c.n_heads;
  c.query_scale = float(1.0 / std::sqrt(wide ? double(c.dim / c.n_heads) : double(c.head_dim)));
}

RopeParams rope_params(const ModelConfig& c, bool local, int context) {
  RopeParams r;
  r.attn_factor = c.rope_attn_factor;
  if (local && c.has_local_rope()) {
    r.base = c.rope_base_swa;  // local layers keep the trained rotation: no scaling, no factors
    return r;
  }
  r.base = c.rope_base;
  r.freq_scale = c.rope_freq_scale;
  const bool long_context = !c.rope_long_factors.empty() && context > c.rope_original_context;
  const std::vector<float>& f = long_context ? c.rope_long_factors : c.rope_freq_factors;
  if (!f.empty()) r.factors = &f;
  return r;
}

std::vector<float> llama3_rope_freq_factors(int head_dim, float rope_base, float factor,
                                            float low_freq_factor, float high_freq_factor,
                                            int original_context_length) {
  // Long wavelengths (low frequencies) are stretched by `factor`, short ones kept, and the band
  // between is interpolated smoothly (Llama 3.1 "rope_type: llama3").
  const double low_wavelen = double(original_context_length) / low_freq_factor;
  const double high_wavelen = double(original_context_length) / high_freq_factor;
  std::vector<float> factors(head_dim / 2);
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(double(rope_base), 2.0 * i / head_dim);
    const double wavelen = 2.0 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      factors[i] = 1.0f;
    } else if (wavelen > low_wavelen) {
      factors[i] = factor;
    } else {
      const double smooth = (double(original_context_length) / wavelen - low_freq_factor) /
                            (high_freq_factor - low_freq_factor);
      factors[i] = float(1.0 / ((1.0 - smooth) / factor + smooth));
    }
  }
  return factors;
}

void fill_rope_tables(const RopeParams& p, int head_dim, int n, int n_past, float* cos_table, float* sin_table) {
  const int half = head_dim / 2;
  std::vector<double> freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    freq[size_t(i)] = std::pow(p.base, -2.0 * i / head_dim);
    if (p.factors) freq[size_t(i)] /= (*p.factors)[size_t(i)];
  }
  for (int r = 0; r < n; ++r) {
    const double pos = double(n_past + r) * p.freq_scale;
    for (int i = 0; i < half; ++i) {
      cos_table[r * half + i] = float(std::cos(pos * freq[size_t(i)]) * p.attn_factor);
      sin_table[r * half + i] = float(std::sin(pos * freq[size_t(i)]) * p.attn_factor);
    }
  }
}

namespace {

// Sliding window, its layer pattern and rope base, and the soft-caps: keys of the architectures
// whose description has them (others ignore the keys, as llama.cpp does for Phi-3's window).
Status read_gemma_keys(const gguf::GgufFile& f, const std::string& p, ModelConfig& c) {
  const ArchDescription& d = describe_arch(c.arch);
  if (d.swa_period > 0) {
    if (f.find(p + "attention.sliding_window")) {
      TANDEM_ASSIGN_OR_RETURN(int64_t w, f.get_int(p + "attention.sliding_window"));
      if (w < 0 || w > (1 << 24)) {
        return InvalidArgument(f.path() + ": " + p + "attention.sliding_window: value " + std::to_string(w) +
                               " is out of range (0.." + std::to_string(1 << 24) + ")");
      }
      c.sliding_window = int(w);
    }
    if (const gguf::Value* v = f.find(p + "attention.sliding_window_pattern")) {
      if (!v->as_array()) {
        TANDEM_ASSIGN_OR_RETURN(c.swa_period, positive_int(f, p + "attention.sliding_window_pattern", 1 << 16));
      } else {
        return Unsupported(f.path() + ": " + p + "attention.sliding_window_pattern: a per-layer array is not supported (a period is)");
      }
    }
    if (f.find(p + "rope.freq_base_swa")) {
      TANDEM_ASSIGN_OR_RETURN(double base, float_key(f, p + "rope.freq_base_swa", 1.0 + 1e-6, 1e12));
      c.rope_base_swa = float(base);
    }
  }
  if (d.post_norms) {  // the soft-capping architectures (Gemma); a 0 in the file turns a cap off
    if (f.find(p + "attn_logit_softcapping")) {
      TANDEM_ASSIGN_OR_RETURN(double cap, float_key(f, p + "attn_logit_softcapping", 0.0, 1e6));
      c.attn_softcap = float(cap);
    }
    if (f.find(p + "final_logit_softcapping")) {
      TANDEM_ASSIGN_OR_RETURN(double cap, float_key(f, p + "final_logit_softcapping", 0.0, 1e6));
      c.final_softcap = float(cap);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> read_model_config(const gguf::GgufFile& f) {
  ModelConfig c;
  TANDEM_ASSIGN_OR_RETURN(c.arch_name, f.get_string("general.architecture"));
  const ArchDescription* info = find_arch(c.arch_name);
  if (!info) {
    return Unsupported(f.path() + ": general.architecture: '" + gguf::printable(c.arch_name) + "' is not supported (supported: " +
                       arch_name_list() + ")");
  }
  c.apply(*info);
  if (auto name = f.get_string("general.name"); name.ok()) c.name = *name;

  const std::string p = c.arch_name + ".";
  constexpr int64_t kMaxDim = 1 << 20;
  TANDEM_ASSIGN_OR_RETURN(c.dim, positive_int(f, p + "embedding_length", kMaxDim));
  TANDEM_ASSIGN_OR_RETURN(c.n_layers, positive_int(f, p + "block_count", 4096));
  TANDEM_ASSIGN_OR_RETURN(c.n_heads, positive_int(f, p + "attention.head_count", 4096));
  TANDEM_ASSIGN_OR_RETURN(c.ffn_dim, positive_int(f, p + "feed_forward_length", kMaxDim));
  c.n_kv_heads = c.n_heads;
  if (f.find(p + "attention.head_count_kv")) {
    TANDEM_ASSIGN_OR_RETURN(c.n_kv_heads, positive_int(f, p + "attention.head_count_kv", 4096));
  }
  c.context_length = 2048;
  if (f.find(p + "context_length")) {
    TANDEM_ASSIGN_OR_RETURN(c.context_length, positive_int(f, p + "context_length", 1 << 24));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return InvalidArgument(f.path() + ": " + p + "attention.head_count_kv: " +
                           std::to_string(c.n_kv_heads) + " does not divide head_count " +
                           std::to_string(c.n_heads));
  }
  // The head size is its own key where it is not dim / heads (Qwen3, Gemma, Mistral-Nemo).
  if (f.find(p + "attention.key_length")) {
    TANDEM_ASSIGN_OR_RETURN(c.head_dim, positive_int(f, p + "attention.key_length", 1 << 16));
    if (f.find(p + "attention.value_length")) {
      TANDEM_ASSIGN_OR_RETURN(int value_length, positive_int(f, p + "attention.value_length", 1 << 16));
      if (value_length != c.head_dim) {
        return Unsupported(f.path() + ": " + p + "attention.value_length: " + std::to_string(value_length) +
                           " differs from key_length " + std::to_string(c.head_dim) + " (not supported)");
      }
    }
  } else if (c.dim % c.n_heads != 0) {
    return InvalidArgument(f.path() + ": " + p + "attention.head_count: " +
                           std::to_string(c.n_heads) + " does not divide embedding_length " +
                           std::to_string(c.dim));
  } else {
    c.head_dim = c.dim / c.n_heads;
  }
  if (c.head_dim % 2 != 0) {
    return InvalidArgument(f.path() + ": head dimension " + std::to_string(c.head_dim) +
                           " is odd; rotary embedding needs pairs");
  }
  if (f.find(p + "rope.dimension_count")) {
    TANDEM_ASSIGN_OR_RETURN(int64_t rd, f.get_int(p + "rope.dimension_count"));
    if (rd != c.head_dim) {
      return Unsupported(f.path() + ": " + p + "rope.dimension_count: " + std::to_string(rd) +
                         " (partial rotary embedding is not supported; head dim is " +
                         std::to_string(c.head_dim) + ")");
    }
  }
  if (f.find(p + "attention.layer_norm_rms_epsilon")) {
    TANDEM_ASSIGN_OR_RETURN(double eps, f.get_float(p + "attention.layer_norm_rms_epsilon"));
    if (!(eps > 0 && eps < 1)) {
      return InvalidArgument(f.path() + ": " + p + "attention.layer_norm_rms_epsilon: " +
                             std::to_string(eps) + " is not in (0, 1)");
    }
    c.rms_eps = float(eps);
  }
  if (f.find(p + "rope.freq_base")) {
    // (1, 1e12]: +inf or a value past fp32's range would make every rotation angle 0 or NaN.
    TANDEM_ASSIGN_OR_RETURN(double base, float_key(f, p + "rope.freq_base", 1.0 + 1e-6, 1e12));
    c.rope_base = float(base);
  }

  // Rope scaling: a rope_freqs.weight tensor (what llama.cpp's converter writes for Llama 3.x)
  // wins; otherwise the rope.scaling.* keys.
  if (const gguf::TensorInfo* t = f.find_tensor("rope_freqs.weight")) {
    TANDEM_ASSIGN_OR_RETURN(c.rope_freq_factors, rope_factor_tensor(f, *t, "rope_freqs.weight", c.head_dim / 2));
  } else if (const gguf::TensorInfo* s = f.find_tensor("rope_factors_short.weight")) {
    // LongRoPE (Phi-3 128k): short factors up to the original context, long ones past it.
    const gguf::TensorInfo* l = f.find_tensor("rope_factors_long.weight");
    if (!l) return InvalidArgument(f.path() + ": tensor 'rope_factors_long.weight' is missing (rope_factors_short.weight is present)");
    TANDEM_ASSIGN_OR_RETURN(c.rope_freq_factors, rope_factor_tensor(f, *s, "rope_factors_short.weight", c.head_dim / 2));
    TANDEM_ASSIGN_OR_RETURN(c.rope_long_factors, rope_factor_tensor(f, *l, "rope_factors_long.weight", c.head_dim / 2));
    c.rope_original_context = c.context_length;
    if (f.find(p + "rope.scaling.original_context_length")) {
      TANDEM_ASSIGN_OR_RETURN(c.rope_original_context, positive_int(f, p + "rope.scaling.original_context_length", 1 << 24));
    }
  } else if (f.find(p + "rope.scaling.type")) {
    TANDEM_ASSIGN_OR_RETURN(std::string type, f.get_string(p + "rope.scaling.type"));
    double factor = 1.0;
    if (f.find(p + "rope.scaling.factor")) {
      TANDEM_ASSIGN_OR_RETURN(factor, f.get_float(p + "rope.scaling.factor"));
    }
    if (!(factor > 0)) {
      return InvalidArgument(f.path() + ": " + p + "rope.scaling.factor: " +
                             std::to_string(factor) + " must be > 0");
    }
    if (type == "linear") {
      c.rope_freq_scale = float(1.0 / factor);
    } else if (type == "llama3") {
      double low = 1.0, high = 4.0;
      int64_t orig = 8192;
      if (f.find(p + "rope.scaling.low_freq_factor")) {
        TANDEM_ASSIGN_OR_RETURN(low, f.get_float(p + "rope.scaling.low_freq_factor"));
      }
      if (f.find(p + "rope.scaling.high_freq_factor")) {
        TANDEM_ASSIGN_OR_RETURN(high, f.get_float(p + "rope.scaling.high_freq_factor"));
      }
      if (f.find(p + "rope.scaling.original_context_length")) {
        TANDEM_ASSIGN_OR_RETURN(orig, f.get_int(p + "rope.scaling.original_context_length"));
      }
      if (!(high > low) || orig <= 0) {
        return InvalidArgument(f.path() + ": " + p +
                               "rope.scaling: llama3 needs high_freq_factor > low_freq_factor "
                               "and original_context_length > 0");
      }
      c.rope_freq_factors = llama3_rope_freq_factors(c.head_dim, c.rope_base, float(factor),
                                                     float(low), float(high), int(orig));
    } else if (type != "none") {
      return Unsupported(f.path() + ": " + p + "rope.scaling.type: '" + gguf::printable(type) +
                         "' is not supported (none, linear, llama3)");
    }
  }

  if (f.find(p + "rope.scaling.attn_factor")) {
    TANDEM_ASSIGN_OR_RETURN(double a, float_key(f, p + "rope.scaling.attn_factor", 1e-3, 1e3));
    c.rope_attn_factor = float(a);
  }
  TANDEM_RETURN_IF_ERROR(read_gemma_keys(f, p, c));

  const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return InvalidArgument(f.path() + ": tensor 'token_embd.weight' is missing");
  if (embd->dims.size() != 2 || embd->dims[0] != uint64_t(c.dim)) {
    return InvalidArgument(f.path() + ": tensor 'token_embd.weight': expected shape [" +
                           std::to_string(c.dim) + ", n_vocab]");
  }
  if (embd->dims[1] > (1u << 24)) {
    return InvalidArgument(f.path() + ": tensor 'token_embd.weight': vocabulary of " +
                           std::to_string(embd->dims[1]) + " rows is too large");
  }
  c.n_vocab = int(embd->dims[1]);
  // One row per token, as llama.cpp requires (its n_vocab is the token count, and token_embd and
  // output must be [dim, n_vocab]). More tokens than rows would index past the embedding; fewer
  // leave rows the sampler can pick that have no text (a run printing nothing, ids the tokenizer
  // does not know). Checkpoints whose embedding is padded past their tokenizer (Phi-3's 32064 rows
  // for Llama 2's 32000 tokens) are converted with the token list padded to match ("<unused..>",
  // "[PAD..]"), so real files hold to this.
  if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->as_array()) {
    const size_t n_tokens = tokens->as_array()->items.size();
    if (n_tokens != size_t(c.n_vocab)) {
      return InvalidArgument(f.path() + ": tokenizer.ggml.tokens: " + std::to_string(n_tokens) +
                             " tokens, but token_embd.weight has " + std::to_string(c.n_vocab) +
                             " rows (one per token)");
    }
  }
  // The output projection makes one logit per token: its rows are the same count.
  if (const gguf::TensorInfo* out = f.find_tensor("output.weight"); out && out->dims.size() >= 2 &&
                                                                     out->dims[1] != uint64_t(c.n_vocab)) {
    return InvalidArgument(f.path() + ": tensor 'output.weight': " + std::to_string(out->dims[1]) +
                           " rows, but token_embd.weight has " + std::to_string(c.n_vocab) + " (one logit per token)");
  }
  // The vocabulary size a converter wrote must agree with the embedding: more than its rows would
  // index past it. Fewer is a padded embedding (the rows past it hold the padding tokens), which
  // llama.cpp loads.
  if (f.find(p + "vocab_size")) {
    TANDEM_ASSIGN_OR_RETURN(int64_t declared, f.get_int(p + "vocab_size"));
    if (declared < 1 || declared > int64_t(c.n_vocab)) {
      return InvalidArgument(f.path() + ": " + p + "vocab_size: " + std::to_string(declared) +
                             " does not fit token_embd.weight's " + std::to_string(c.n_vocab) + " rows (1.." +
                             std::to_string(c.n_vocab) + ")");
    }
    if (declared < int64_t(c.n_vocab)) {
      std::fprintf(stderr, "tandem: warning: %s: %svocab_size %lld is below token_embd.weight's %d rows (a padded embedding)\n",
                   f.path().c_str(), p.c_str(), static_cast<long long>(declared), c.n_vocab);
    }
  }
  c.tied_embeddings = info->tied_only || f.find_tensor("output.weight") == nullptr;
  if (describe_arch(c.arch).fused_tensors) {
    c.fused_qkv = f.find_tensor("blk.0.attn_qkv.weight") != nullptr;
    c.fused_gate_up = f.find_tensor("blk.0.ffn_gate.weight") == nullptr;
  }
  finish_derived_scales(c);
  return c;
}

std::string ModelConfig::describe() const {
  std::ostringstream s;
  s << arch_name << ": dim " << dim << ", layers " << n_layers << ", heads " << n_heads << " (kv "
    << n_kv_heads << ", head dim " << head_dim << "), ffn " << ffn_dim << ", vocab " << n_vocab
    << ", ctx " << context_length << ", rope base " << rope_base << ", rms eps " << rms_eps;
  if (!rope_freq_factors.empty()) s << ", rope freq factors";
  if (rope_freq_scale != 1.0f) s << ", rope scale " << rope_freq_scale;
  if (tied_embeddings) s << ", tied embeddings";
  if (qkv_bias) s << ", qkv bias";
  if (qk_norm) s << ", q/k norms";
  if (q_dim() != dim) s << ", attention width " << q_dim();
  if (activation != Activation::kSilu) s << ", " << activation_name(activation) << " ffn";
  if (post_norms) s << ", post norms";
  if (embedding_scale != 1.0f) s << ", embedding scale " << embedding_scale;
  if (sliding_window > 0) s << ", sliding window " << sliding_window << " (period " << swa_period << ")";
  if (has_local_rope()) s << ", local rope base " << rope_base_swa;
  if (attn_softcap > 0) s << ", attention softcap " << attn_softcap;
  if (final_softcap > 0) s << ", logit softcap " << final_softcap;
  if (!rope_long_factors.empty()) s << ", LongRoPE (original ctx " << rope_original_context << ")";
  if (fused_qkv) s << ", fused qkv";
  if (fused_gate_up) s << ", fused gate_up";
  return s.str();
}

}  // namespace tandem
