#include "model/gen_model.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>

#include "core/half.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "model/gguf/gguf.h"
#include "model/quantize/quantize_rules.h"

namespace tandem {
namespace {

// GGUF's general.file_type (llama.cpp's llama_ftype) for a model whose matrices are all of one
// type; a lone Q3_K/Q4_K/Q5_K reads as its "_M" mix, as `llama-quantize --pure IN OUT Q4_K` labels it.
uint32_t file_type_of(DType t) {
  switch (t) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::Q4_0: return 2;
    case DType::Q4_1: return 3;
    case DType::Q8_0: return 7;
    case DType::Q5_0: return 8;
    case DType::Q5_1: return 9;
    case DType::Q2_K: return 10;
    case DType::Q3_K: return 12;
    case DType::Q4_K: return 15;
    case DType::Q5_K: return 17;
    case DType::Q6_K: return 18;
    case DType::IQ4_NL: return 25;
    case DType::IQ4_XS: return 30;
    case DType::BF16: return 32;
  }
  return 0;
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s, uint64_t seed) {
  uint64_t h = seed ^ 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// How a tensor's random values are drawn: uniform in [center - half_width, center + half_width].
struct Init {
  float center;
  float half_width;
};

// Fills one row of f32 values from a generator seeded by (tensor, row), so the bytes do not
// depend on how rows are spread over threads.
void random_row(float* out, int64_t cols, uint64_t tensor_seed, int64_t row, Init init) {
  uint64_t state = tensor_seed ^ (uint64_t(row) * 0xd1b54a32d192ed03ull);
  for (int64_t i = 0; i < cols; ++i) {
    const double u = double(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    out[i] = float(init.center + init.half_width * (2.0 * u - 1.0));
  }
}

void encode_row(const float* src, uint8_t* dst, int64_t cols, DType type) { quantize_row(type, src, dst, size_t(cols)); }

gguf::Value u32(int64_t v) { return gguf::Value{uint32_t(v)}; }
gguf::Value f32(double v) { return gguf::Value{float(v)}; }
gguf::Value str(std::string v) { return gguf::Value{std::move(v)}; }

// Phi-3's vocabulary from Llama 2's 32000 SentencePiece tokens, as llama.cpp's converter wrote it
// (its ggml-vocab-phi-3.gguf, which the test compares token for token): <unk>, <s> and </s>
// re-declared by Phi-3's tokenizer_config.json (score -1000; <unk> and <s> control, </s> user-defined),
// eleven chat and placeholder tokens after them (control, -1000), then "[PAD<id>]" (-10000, type
// unknown) up to its config's vocab_size 32064. llama.cpp refuses a model named phi3 without
// <|endoftext|>. `a` is the tokenizer's array under `key` (tokens, scores or token_type).
gguf::Array phi3_per_token(const std::string& key, gguf::Array a, int64_t end) {
  static const char* const kChat[] = {"<|endoftext|>",    "<|assistant|>",    "<|placeholder1|>", "<|placeholder2|>",
                                      "<|placeholder3|>", "<|placeholder4|>", "<|system|>",       "<|end|>",
                                      "<|placeholder5|>", "<|placeholder6|>", "<|user|>"};
  constexpr int32_t kUnknown = 2, kControl = 3, kUserDefined = 4;
  const int64_t first = int64_t(a.items.size());
  if (key == "tokenizer.ggml.scores")
    for (int id = 0; id < 3; ++id) a.items[size_t(id)] = gguf::Value{-1000.0f};
  if (key == "tokenizer.ggml.token_type") {
    a.items[0] = a.items[1] = gguf::Value{kControl};
    a.items[2] = gguf::Value{kUserDefined};
  }
  for (int64_t id = first; id < end; ++id) {
    const size_t chat = size_t(id - first);
    const bool added = chat < std::size(kChat);
    if (key == "tokenizer.ggml.tokens")
      a.items.push_back(gguf::Value{added ? std::string(kChat[chat]) : "[PAD" + std::to_string(id) + "]"});
    if (key == "tokenizer.ggml.scores") a.items.push_back(gguf::Value{added ? -1000.0f : -10000.0f});
    if (key == "tokenizer.ggml.token_type") a.items.push_back(gguf::Value{added ? kControl : kUnknown});
  }
  return a;
}

}  // namespace

std::optional<ModelShape> model_preset(const std::string& name) {
  // Shapes of the published models (their config.json), weights random.
  if (name == "tinyllama-1.1b") return ModelShape{name, Arch::kLlama, 2048, 22, 32, 4, 5632, 2048, 10000.0f, 1e-5f, false, 0.0f};
  if (name == "llama3.2-1b") return ModelShape{name, Arch::kLlama, 2048, 16, 32, 8, 8192, 131072, 500000.0f, 1e-5f, true, 32.0f};
  if (name == "qwen2.5-0.5b") return ModelShape{name, Arch::kQwen2, 896, 24, 14, 2, 4864, 32768, 1000000.0f, 1e-6f, true, 0.0f};
  // Qwen3-0.6B: 16 heads of 128 over a 1024 embedding (the attention is twice the embedding wide).
  if (name == "qwen3-0.6b") return ModelShape{name, Arch::kQwen3, 1024, 28, 16, 8, 3072, 40960, 1000000.0f, 1e-6f, true, 0.0f, 0, 128};
  // Phi-3-mini-4k-instruct: fused qkv and gate_up (written fused, as llama.cpp's converter does).
  if (name == "phi3-mini") return ModelShape{name, Arch::kPhi3, 3072, 32, 32, 32, 8192, 4096, 10000.0f, 1e-5f, false, 0.0f, 32064};
  // Gemma-2-2b: 8 heads of 256 over 2304 (wider than dim/heads), local layers with a 4096 window.
  if (name == "gemma2-2b") return ModelShape{name, Arch::kGemma2, 2304, 26, 8, 4, 9216, 8192, 10000.0f, 1e-6f, true, 0.0f, 256000, 256, 4096};
  // Gemma-3-1b: one kv head, 5 local layers (window 512, rope base 10k) to each global one (1M).
  if (name == "gemma3-1b") return ModelShape{name, Arch::kGemma3, 1152, 26, 4, 1, 6912, 32768, 1000000.0f, 1e-6f, true, 0.0f, 262144, 256, 512};
  // The built-in default model of `tandem` with no arguments: big enough to measure, small
  // enough to generate in seconds (about 60 M parameters).
  if (name == "demo") return ModelShape{name, Arch::kLlama, 512, 8, 8, 4, 1536, 2048, 10000.0f, 1e-5f, false, 0.0f};
  // A few MB: fast enough for every test, but with GQA, several layers and real vocab sizes.
  if (name == "test-small") return ModelShape{name, Arch::kLlama, 64, 2, 4, 2, 192, 512, 10000.0f, 1e-5f, false, 0.0f};
  // The models of the HeteroInfer evaluation (shapes from their published configs), for the
  // simulator and the planner without weight files.
  if (name == "llama3-8b") return ModelShape{name, Arch::kLlama, 4096, 32, 32, 8, 14336, 8192, 500000.0f, 1e-5f, false, 0.0f, 128256};
  if (name == "llama3.2-3b") return ModelShape{name, Arch::kLlama, 3072, 28, 24, 8, 8192, 131072, 500000.0f, 1e-5f, true, 32.0f, 128256};
  if (name == "internlm2-1.8b") return ModelShape{name, Arch::kLlama, 2048, 24, 16, 8, 8192, 32768, 1000000.0f, 1e-5f, false, 0.0f, 92544};
  if (name == "llama2-7b") return ModelShape{name, Arch::kLlama, 4096, 32, 32, 32, 11008, 4096, 10000.0f, 1e-5f, false, 0.0f, 32000};
  return std::nullopt;
}

ModelConfig config_of_shape(const ModelShape& s, int n_vocab) {
  ModelConfig c;
  c.apply(describe_arch(s.arch));
  c.name = s.name;
  c.n_vocab = n_vocab > 0 ? n_vocab : s.n_vocab;
  c.dim = s.dim;
  c.n_layers = s.n_layers;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.head_dim = s.head_dim > 0 ? s.head_dim : s.dim / s.n_heads;
  c.ffn_dim = s.ffn_dim;
  c.context_length = s.context_length;
  c.rms_eps = s.rms_eps;
  c.rope_base = s.rope_base;
  c.tied_embeddings = s.tied_embeddings || describe_arch(s.arch).tied_only;
  if (s.sliding_window > 0) c.sliding_window = s.sliding_window;
  if (s.swa_period > 0) c.swa_period = s.swa_period;
  finish_derived_scales(c);
  return c;
}

Result<std::shared_ptr<Model>> shape_only_preset(const std::string& name, DType matrix_type) {
  std::optional<ModelShape> s = model_preset(name);
  if (!s) {
    std::string all;
    for (const std::string& n : model_preset_names()) all += (all.empty() ? "" : ", ") + n;
    return InvalidArgument("--model-preset: '" + name + "' is not a preset (" + all + ")");
  }
  TANDEM_RETURN_IF_ERROR(validate_shape(*s, matrix_type));
  return Model::shape_only(config_of_shape(*s, s->n_vocab > 0 ? s->n_vocab : 32000), matrix_type);
}

std::vector<std::string> model_preset_names() {
  return {"tinyllama-1.1b", "llama3.2-1b", "qwen2.5-0.5b", "qwen3-0.6b", "phi3-mini", "gemma2-2b", "gemma3-1b", "test-small", "demo",
          "llama3-8b", "llama3.2-3b", "internlm2-1.8b", "llama2-7b"};
}

Status validate_shape(const ModelShape& s, DType type) {
  auto positive = [](const char* what, int v) -> Status {
    if (v <= 0 || v > (1 << 20)) return InvalidArgument(std::string(what) + ": " + std::to_string(v) + " must be in 1..1048576");
    return Status::Ok();
  };
  TANDEM_RETURN_IF_ERROR(positive("--dim", s.dim));
  TANDEM_RETURN_IF_ERROR(positive("--layers", s.n_layers));
  TANDEM_RETURN_IF_ERROR(positive("--heads", s.n_heads));
  TANDEM_RETURN_IF_ERROR(positive("--kv-heads", s.n_kv_heads));
  TANDEM_RETURN_IF_ERROR(positive("--ffn", s.ffn_dim));
  if (s.n_heads % s.n_kv_heads) return InvalidArgument("--kv-heads: " + std::to_string(s.n_kv_heads) + " does not divide --heads " + std::to_string(s.n_heads));
  if (s.head_dim > 0) {
    if (s.head_dim > 65536 || s.head_dim % 2) return InvalidArgument("--head-dim: " + std::to_string(s.head_dim) + " must be even and at most 65536");
  } else {
    if (s.dim % s.n_heads) return InvalidArgument("--heads: " + std::to_string(s.n_heads) + " does not divide --dim " + std::to_string(s.dim));
    if ((s.dim / s.n_heads) % 2) return InvalidArgument("--dim / --heads: head dimension " + std::to_string(s.dim / s.n_heads) + " must be even");
  }
  const uint32_t block = dtype_traits(type).block_size;
  if (s.dim % block || s.ffn_dim % block) {
    return InvalidArgument("--type " + std::string(dtype_name(type)) + ": --dim " + std::to_string(s.dim) + " and --ffn " +
                           std::to_string(s.ffn_dim) + " must be multiples of " + std::to_string(block));
  }
  if (s.q_dim() % int(block)) {  // attn_output's rows are the heads' width
    return InvalidArgument("--type " + std::string(dtype_name(type)) + ": --heads x --head-dim = " + std::to_string(s.q_dim()) +
                           " must be a multiple of " + std::to_string(block));
  }
  return Status::Ok();
}

Status generate_model(const GenModelOptions& o, const std::string& out_path) {
  const ModelShape& s = o.shape;
  // A mix falls back per tensor where a row does not fit its block (to 32-element types at worst).
  TANDEM_RETURN_IF_ERROR(validate_shape(s, o.mix ? DType::Q8_0 : o.type));
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> vocab, gguf::GgufFile::open(o.vocab_path));
  TANDEM_ASSIGN_OR_RETURN(const gguf::Array* tokens, vocab->get_array("tokenizer.ggml.tokens"));
  int64_t n_vocab = int64_t(tokens->items.size());
  if (n_vocab == 0) return InvalidArgument(o.vocab_path + ": tokenizer.ggml.tokens: empty");
  if (o.vocab_limit < 0) return InvalidArgument("vocab limit: " + std::to_string(o.vocab_limit) + " is negative");
  if (o.vocab_limit > 0 && o.vocab_limit < n_vocab) {
    // Merges name token strings: with some tokens gone they could build a token that is not there.
    if (vocab->find("tokenizer.ggml.merges"))
      return InvalidArgument(o.vocab_path + ": tokenizer.ggml.merges: a vocabulary with merges cannot be cut to " +
                             std::to_string(o.vocab_limit) + " tokens");
    n_vocab = o.vocab_limit;
  }
  // The phi3 presets' published vocabulary: Llama 2's tokens (the default tokenizer) and Phi-3's.
  const int64_t llama2_vocab = 32000;
  const bool phi3_vocab =
      s.arch == Arch::kPhi3 && n_vocab == llama2_vocab && s.n_vocab > n_vocab && !vocab->find("tokenizer.ggml.merges");
  if (phi3_vocab) n_vocab = s.n_vocab;

  const std::string arch = arch_name(s.arch);
  const std::string p = arch + ".";
  const ArchDescription& arch_desc = describe_arch(s.arch);
  const int head_dim = s.head_dim > 0 ? s.head_dim : s.dim / s.n_heads;
  const int kv_dim = s.n_kv_heads * head_dim, q_dim = s.q_dim();

  gguf::GgufWriter w;
  w.set("general.architecture", str(arch));
  w.set("general.name", str("tandem random " + s.name));
  w.set("general.file_type", u32(o.mix ? o.mix->file_type : file_type_of(o.type)));
  if (is_block_quantized(o.type)) w.set("general.quantization_version", u32(2));
  w.set(p + "context_length", u32(s.context_length));
  w.set(p + "embedding_length", u32(s.dim));
  w.set(p + "block_count", u32(s.n_layers));
  w.set(p + "feed_forward_length", u32(s.ffn_dim));
  w.set(p + "attention.head_count", u32(s.n_heads));
  w.set(p + "attention.head_count_kv", u32(s.n_kv_heads));
  w.set(p + "attention.layer_norm_rms_epsilon", f32(s.rms_eps));
  w.set(p + "rope.freq_base", f32(s.rope_base));
  w.set(p + "rope.dimension_count", u32(head_dim));
  if (s.head_dim > 0) {
    w.set(p + "attention.key_length", u32(head_dim));
    w.set(p + "attention.value_length", u32(head_dim));
  }
  w.set(p + "vocab_size", u32(n_vocab));
  if (arch_desc.swa_period > 0) {
    const int window = s.sliding_window > 0 ? s.sliding_window : arch_desc.default_window;
    if (window > 0) w.set(p + "attention.sliding_window", u32(window));
    if (s.swa_period > 0) w.set(p + "attention.sliding_window_pattern", u32(s.swa_period));
  }
  if (s.longrope_original_context > 0) {
    const double scale = double(s.context_length) / s.longrope_original_context;
    w.set(p + "rope.scaling.original_context_length", u32(s.longrope_original_context));
    w.set(p + "rope.scaling.attn_factor",
          f32(scale > 1 ? std::sqrt(1 + std::log(scale) / std::log(double(s.longrope_original_context))) : 1.0));
  }
  // Gemma 2's caps, as its converter writes them (gemma_pytorch's config).
  if (arch_desc.default_attn_softcap > 0)
    w.set(p + "attn_logit_softcapping", f32(s.attn_softcap > 0 ? s.attn_softcap : arch_desc.default_attn_softcap));
  if (arch_desc.default_final_softcap > 0)
    w.set(p + "final_logit_softcapping", f32(s.final_softcap > 0 ? s.final_softcap : arch_desc.default_final_softcap));
  for (const auto& [key, value] : vocab->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    // Per-token arrays (tokens, scores, token_type) keep the first n_vocab entries.
    const gguf::Array* per_token = std::get_if<gguf::Array>(&value.v);
    if (per_token && per_token->items.size() == tokens->items.size() && int64_t(per_token->items.size()) > n_vocab) {
      gguf::Array cut{per_token->type, {per_token->items.begin(), per_token->items.begin() + n_vocab}};
      w.set(key, gguf::Value{std::move(cut)});
    } else if (per_token && per_token->items.size() == tokens->items.size() && phi3_vocab) {
      w.set(key, gguf::Value{phi3_per_token(key, *per_token, n_vocab)});
    } else {
      w.set(key, value);
    }
  }
  // Phi-3-mini's tokenizer_config.json names <|endoftext|> its eos and pad token.
  if (phi3_vocab) {
    w.set("tokenizer.ggml.eos_token_id", u32(llama2_vocab));
    w.set("tokenizer.ggml.padding_token_id", u32(llama2_vocab));
  }

  auto pool = std::make_shared<ThreadPool>(o.n_threads);
  // Progress: bytes of tensors written so far over the total, reported after each tensor.
  struct Progress {
    uint64_t done = 0, total = 0;
    std::function<void(double)> report;
  };
  auto progress = std::make_shared<Progress>();
  progress->report = o.progress;
  // Tensors are planned first and registered at the end: a mix's per-tensor types depend on the
  // whole list (how many attn_v there are, whether output.weight exists).
  struct Planned {
    std::string name;
    std::vector<uint64_t> dims;
    DType type;
    std::function<void(uint8_t* dst, size_t n, DType type)> fill;
  };
  std::vector<Planned> planned;
  auto add_tensor = [&](const std::string& name, std::vector<uint64_t> dims, DType type, gguf::GgufWriter::Producer fill) {
    planned.push_back({name, std::move(dims), type, [fill = std::move(fill)](uint8_t* dst, size_t n, DType) { fill(dst, n); }});
  };
  // A matrix of rows x cols in the chosen type, drawn row by row in parallel.
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, Init init, DType type) {
    const uint64_t seed = hash_name(name, o.seed);
    planned.push_back({name, {uint64_t(cols), uint64_t(rows)}, type, [=](uint8_t* dst, size_t, DType as) {
                         const size_t rb = row_bytes(as, size_t(cols));
                         pool->parallel_for(size_t(rows), [&](size_t b, size_t e, int) {
                           std::vector<float> row(static_cast<size_t>(cols));
                           for (size_t r = b; r < e; ++r) {
                             random_row(row.data(), cols, seed, int64_t(r), init);
                             encode_row(row.data(), dst + r * rb, cols, as);
                           }
                         });
                       }});
  };
  auto vector = [&](const std::string& name, int64_t n, Init init) {
    const uint64_t seed = hash_name(name, o.seed);
    add_tensor(name, {uint64_t(n)}, DType::F32, [=](uint8_t* dst, size_t) {
      random_row(reinterpret_cast<float*>(dst), n, seed, 0, init);
    });
  };
  // Linear layers draw with standard deviation 1/sqrt(fan_in) (uniform half-width sqrt(3) times
  // that), so activations keep unit scale through the stack; norm gains sit near 1.
  auto linear = [](int64_t fan_in) { return Init{0.0f, float(std::sqrt(3.0 / double(fan_in)))}; };
  const Init norm{1.0f, 0.2f};

  // An architecture that scales its embeddings by sqrt(dim) stores them that much smaller (as
  // Gemma's trained ones are), so the rows enter the stack at unit scale either way.
  const float embd_range = arch_desc.embedding_scale ? float(1.7 / std::sqrt(double(s.dim))) : 1.7f;
  matrix("token_embd.weight", n_vocab, s.dim, Init{0.0f, embd_range}, o.type);
  vector("output_norm.weight", s.dim, norm);
  // Logits drawn a little wider than unit scale so that the greedy choice is rarely a near-tie.
  if (!s.tied_embeddings && !arch_desc.tied_only) matrix("output.weight", n_vocab, s.dim, Init{0.0f, float(4.0 / std::sqrt(s.dim))}, o.type);
  if (s.longrope_original_context > 0) {
    // Divisors rising with wavelength, as trained LongRoPE factors do: short ones near 1, long ones
    // stretching the slowest frequencies most.
    for (const auto& [name, top] : {std::pair{"rope_factors_short.weight", 1.5}, std::pair{"rope_factors_long.weight", 8.0}}) {
      std::vector<float> f(size_t(head_dim / 2));
      for (size_t i = 0; i < f.size(); ++i) f[i] = float(1.0 + (top - 1.0) * double(i) / double(f.size()));
      add_tensor(name, {uint64_t(f.size())}, DType::F32, [f](uint8_t* dst, size_t n) { std::memcpy(dst, f.data(), n); });
    }
  }
  if (s.llama3_rope_factor > 0) {
    const std::vector<float> f = llama3_rope_freq_factors(head_dim, s.rope_base, s.llama3_rope_factor, 1.0f, 4.0f, 8192);
    add_tensor("rope_freqs.weight", {uint64_t(f.size())}, DType::F32,
                 [f](uint8_t* dst, size_t n) { std::memcpy(dst, f.data(), n); });
  }
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    vector(b + "attn_norm.weight", s.dim, norm);
    if (arch_desc.fused_tensors) {  // Phi-3's converter writes q, k, v as one tensor
      matrix(b + "attn_qkv.weight", q_dim + 2 * kv_dim, s.dim, linear(s.dim), o.type);
    } else {
      matrix(b + "attn_q.weight", q_dim, s.dim, linear(s.dim), o.type);
      matrix(b + "attn_k.weight", kv_dim, s.dim, linear(s.dim), o.type);
      matrix(b + "attn_v.weight", kv_dim, s.dim, linear(s.dim), o.type);
    }
    if (arch_desc.qkv_bias) {
      vector(b + "attn_q.bias", q_dim, Init{0.0f, 0.5f});
      vector(b + "attn_k.bias", kv_dim, Init{0.0f, 0.5f});
      vector(b + "attn_v.bias", kv_dim, Init{0.0f, 0.5f});
    }
    if (arch_desc.qk_norm) {
      vector(b + "attn_q_norm.weight", head_dim, norm);
      vector(b + "attn_k_norm.weight", head_dim, norm);
    }
    matrix(b + "attn_output.weight", s.dim, q_dim, linear(q_dim), o.type);
    if (arch_desc.post_norms) vector(b + "post_attention_norm.weight", s.dim, norm);
    vector(b + "ffn_norm.weight", s.dim, norm);
    if (arch_desc.fused_tensors) {  // [gate; up] in one tensor named ffn_up
      matrix(b + "ffn_up.weight", 2 * int64_t(s.ffn_dim), s.dim, linear(s.dim), o.type);
    } else {
      matrix(b + "ffn_gate.weight", s.ffn_dim, s.dim, linear(s.dim), o.type);
      matrix(b + "ffn_up.weight", s.ffn_dim, s.dim, linear(s.dim), o.type);
    }
    matrix(b + "ffn_down.weight", s.dim, s.ffn_dim, linear(s.ffn_dim), o.type);
    if (arch_desc.post_norms) vector(b + "post_ffw_norm.weight", s.dim, norm);
  }
  std::vector<DType> types;
  for (const Planned& t : planned) types.push_back(t.type);
  if (o.mix) {  // llama-quantize's per-tensor choices for the mix (the matrices were planned as its base)
    std::vector<TensorShape> shapes;
    for (const Planned& t : planned) shapes.push_back({t.name, t.dims, DType::F32});
    types = choose_tensor_types(shapes, *o.mix, false, s.n_layers, s.n_heads / s.n_kv_heads);
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    Planned& t = planned[i];
    uint64_t elements = 1;
    for (uint64_t d : t.dims) elements *= d;
    const uint64_t bytes = row_bytes(types[i], size_t(elements));
    progress->total += bytes;
    w.add_tensor(t.name, t.dims, types[i], [progress, bytes, fill = std::move(t.fill), type = types[i]](uint8_t* dst, size_t n) {
      fill(dst, n, type);
      progress->done += bytes;
      if (progress->report) progress->report(double(progress->done) / double(progress->total));
    });
  }
  return w.write(out_path);
}

}  // namespace tandem
