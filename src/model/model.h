// A loaded model: its hyperparameters, its weights (views into the mmap'd GGUF, never copied,
// so quantized weights stay quantized in memory) and its tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "model/arch.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem::gguf {
class GgufFile;
}

namespace tandem {

// A 1-D or 2-D weight: `rows` vectors of `cols` elements, row-major in `type` (GGUF dims
// [cols, rows]). A 1-D tensor has rows == 1.
struct Weight {
  std::string name;
  DType type = DType::F32;
  const uint8_t* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  bool present() const { return data != nullptr; }
  size_t row_bytes() const { return tandem::row_bytes(type, size_t(cols)); }
  size_t n_bytes() const { return row_bytes() * size_t(rows); }
  const float* f32() const { return reinterpret_cast<const float*>(data); }
};

// A fused tensor (Phi-3's attn_qkv, ffn_up holding [gate; up]) is split at load into row-range
// views named "<tensor>[q]" etc.: every device sees the three (two) weights it would see unfused.
struct LayerWeights {
  Weight attn_norm;       // [dim]
  Weight wq, wk, wv;      // [q_dim x dim], [kv_dim x dim], [kv_dim x dim]  (rows x cols; q_dim = heads x head_dim)
  Weight bq, bk, bv;      // [q_dim], [kv_dim], [kv_dim]  (qkv_bias: qwen2)
  Weight q_norm, k_norm;  // [head_dim] each  (qk_norm: qwen3, gemma3)
  Weight wo;              // [dim x q_dim]
  Weight attn_post_norm;  // [dim]  (post_norms: gemma2, gemma3)
  Weight ffn_norm;        // [dim]
  Weight w_gate, w_up;    // [ffn x dim]
  Weight w_down;          // [dim x ffn]
  Weight ffn_post_norm;   // [dim]  (post_norms)

  // Every weight the layer has (absent optional ones left out), in the order above.
  std::vector<const Weight*> present() const;
};

class Model {
 public:
  // Opens the GGUF, reads the config, binds and shape-checks every tensor, builds the tokenizer.
  static Result<std::shared_ptr<Model>> load(const std::string& path);
  // Same, from an already opened file.
  static Result<std::shared_ptr<Model>> from_gguf(std::shared_ptr<gguf::GgufFile> file);
  // A model with every weight's name, shape and type but no data, file or tokenizer: what the
  // simulator and the planner need to reason about a published model without its weights.
  // 2-D weights get `matrix_type`, norms f32. Never run it on a device.
  static std::shared_ptr<Model> shape_only(ModelConfig config, DType matrix_type);
  bool is_shape_only() const { return file_ == nullptr; }

  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }  // not for shape-only models
  const gguf::GgufFile& file() const { return *file_; }        // not for shape-only models

  const Weight& token_embd() const { return token_embd_; }  // [n_vocab x dim]
  const Weight& output_norm() const { return output_norm_; }  // [dim]
  const Weight& output() const { return output_; }  // [n_vocab x dim]; token_embd when tied
  const std::vector<LayerWeights>& layers() const { return layers_; }

  // Every weight once (the tied output is not counted twice).
  std::vector<const Weight*> all_weights() const;
  uint64_t weight_bytes() const;      // total bytes of all weights
  uint64_t n_params() const;          // total elements of all weights
  DType dominant_weight_type() const;       // the type holding the most bytes of matrices
  std::string weight_type_summary() const;  // its name, e.g. "q4_0"

 private:
  Model() = default;
  std::shared_ptr<gguf::GgufFile> file_;
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  Weight token_embd_, output_norm_, output_;
  std::vector<LayerWeights> layers_;
};

}  // namespace tandem
