#include "model/arch.h"

#include <cmath>
#include <numbers>
#include <sstream>

#include "model/gguf/gguf.h"

namespace tandem {
namespace {

// Llama GGUFs store q/k rows permuted for adjacent-pair rotation (llama.cpp's converter); Qwen
// keeps the original layout and rotates halves (NEOX style).
constexpr ArchDescription kArchitectures[] = {
    //  arch          name     rope style                   qkv_bias  qk_norm
    {Arch::kLlama, "llama", RopeStyle::kAdjacentPairs, false, false},
    {Arch::kQwen2, "qwen2", RopeStyle::kHalfSplit, true, false},
    {Arch::kQwen3, "qwen3", RopeStyle::kHalfSplit, false, true},
};

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

void ModelConfig::apply(const ArchDescription& d) {
  arch = d.arch;
  arch_name = d.name;
  rope_style = d.rope_style;
  qkv_bias = d.qkv_bias;
  qk_norm = d.qk_norm;
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

void fill_rope_tables(const ModelConfig& c, int n, int n_past, float* cos_table, float* sin_table) {
  const int half = c.head_dim / 2;
  std::vector<double> freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    freq[size_t(i)] = std::pow(double(c.rope_base), -2.0 * i / c.head_dim);
    if (!c.rope_freq_factors.empty()) freq[size_t(i)] /= c.rope_freq_factors[size_t(i)];
  }
  for (int r = 0; r < n; ++r) {
    const double pos = double(n_past + r) * c.rope_freq_scale;
    for (int i = 0; i < half; ++i) {
      cos_table[r * half + i] = float(std::cos(pos * freq[size_t(i)]));
      sin_table[r * half + i] = float(std::sin(pos * freq[size_t(i)]));
    }
  }
}

Result<ModelConfig> read_model_config(const gguf::GgufFile& f) {
  ModelConfig c;
  TANDEM_ASSIGN_OR_RETURN(c.arch_name, f.get_string("general.architecture"));
  const ArchDescription* info = find_arch(c.arch_name);
  if (!info) {
    return Unsupported(f.path() + ": general.architecture: '" + c.arch_name + "' is not supported (supported: " +
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
    TANDEM_ASSIGN_OR_RETURN(double base, f.get_float(p + "rope.freq_base"));
    if (!(base > 1)) {
      return InvalidArgument(f.path() + ": " + p + "rope.freq_base: " + std::to_string(base) +
                             " must be > 1");
    }
    c.rope_base = float(base);
  }

  // Rope scaling: a rope_freqs.weight tensor (what llama.cpp's converter writes for Llama 3.x)
  // wins; otherwise the rope.scaling.* keys.
  if (const gguf::TensorInfo* t = f.find_tensor("rope_freqs.weight")) {
    if (t->type != DType::F32 || t->n_elements() != uint64_t(c.head_dim / 2)) {
      return InvalidArgument(f.path() + ": tensor 'rope_freqs.weight': expected " +
                             std::to_string(c.head_dim / 2) + " f32 values");
    }
    const float* v = reinterpret_cast<const float*>(t->data);
    c.rope_freq_factors.assign(v, v + c.head_dim / 2);
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
      return Unsupported(f.path() + ": " + p + "rope.scaling.type: '" + type +
                         "' is not supported (none, linear, llama3)");
    }
  }

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
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
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
  return s.str();
}

}  // namespace tandem
