// Writes GGUF models with random weights and real shapes: test models, benchmark models of any
// published shape, and the built-in default model, without downloading anything.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "model/arch.h"
#include "model/model.h"
#include "model/quantize/quantize_rules.h"

namespace tandem {

struct ModelShape {
  std::string name;  // preset name or "custom"
  Arch arch = Arch::kLlama;
  int dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, ffn_dim = 0;
  int context_length = 2048;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_embeddings = false;
  // llama3 rope scaling (written as rope_freqs.weight, as llama.cpp's converter does); 0 = off.
  float llama3_rope_factor = 0.0f;
  // The published vocabulary (shape-only models). gen-model writes its tokenizer's instead, except
  // that a phi3 shape over Llama 2's tokenizer gets Phi-3's 32064 (generate_model).
  int n_vocab = 0;
  int head_dim = 0;  // 0: dim / n_heads; else written as attention.key_length (Qwen3 and others)
  // Sliding-window architectures (gemma2, gemma3): attention.sliding_window; 0 = the
  // architecture's default (gemma2's 4096; gemma3 then has no local layers).
  int sliding_window = 0;
  // Soft-caps (gemma2's keys), 0: the architecture's default (50 and 30).
  float attn_softcap = 0, final_softcap = 0;
  int swa_period = 0;  // attention.sliding_window_pattern, written when > 0 (else the architecture's)
  // LongRoPE (phi3): > 0 writes rope_factors_short/long.weight, this original context and the
  // attention factor sqrt(1 + ln(context / original) / ln(original)), as Phi-3's converter does.
  int longrope_original_context = 0;
  int q_dim() const { return n_heads * (head_dim > 0 ? head_dim : dim / n_heads); }
};

// Known presets: tinyllama-1.1b, llama3.2-1b, qwen2.5-0.5b, qwen3-0.6b, phi3-mini, gemma2-2b, gemma3-1b,
// test-small, demo, and the models of
// the HeteroInfer paper: llama3-8b, llama3.2-3b, internlm2-1.8b, llama2-7b.
std::optional<ModelShape> model_preset(const std::string& name);
std::vector<std::string> model_preset_names();

// The hyperparameters a model of this shape has (n_vocab: the shape's, or the argument if > 0).
ModelConfig config_of_shape(const ModelShape& shape, int n_vocab = 0);
// A shape-only model of a preset (Model::shape_only): the error lists the presets.
Result<std::shared_ptr<Model>> shape_only_preset(const std::string& name, DType matrix_type);

struct GenModelOptions {
  ModelShape shape;
  std::string vocab_path;  // a GGUF whose tokenizer.* metadata is copied
  // > 0: keep only the first vocab_limit tokens of a vocabulary without merges (SentencePiece:
  // every token stands alone), so embedding and output are that many rows. Test models that
  // need wide rows (256-element blocks) stay small this way; token ids are all such tests use.
  int vocab_limit = 0;
  DType type = DType::F32;  // type of the 2-D weight matrices; norms and biases stay f32
  // A llama-quantize mix (q4_k_m, ...): each matrix gets the mix's type for it (`type` must be the
  // mix's base), as `tandem quantize` would write it from f32.
  std::optional<QuantizeTarget> mix;
  uint64_t seed = 42;
  int n_threads = 2;
  // Called after each tensor with the fraction of bytes written so far (for a progress bar).
  std::function<void(double)> progress;
};

// Writes the model; the vocabulary size is the tokenizer's (a phi3 preset's over Llama 2's tokenizer:
// Phi-3's 32064, its added tokens appended). Errors name the option and value.
Status generate_model(const GenModelOptions& options, const std::string& out_path);

// Checks a custom shape (positive sizes, heads divide dim, kv heads divide heads, sizes that the
// weight type's blocks divide).
Status validate_shape(const ModelShape& shape, DType type);

}  // namespace tandem
