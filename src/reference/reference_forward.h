// The correctness oracle: a plain fp64 transformer forward pass, one token at a time, written to
// be read top to bottom rather than to be fast. It shares nothing with the CPU device's kernels
// except the model's weight bytes (dequantized here with the reference dequantizers), so a bug
// in a fast kernel cannot hide by also being in the oracle.
#pragma once

#include <memory>
#include <vector>

#include "model/model.h"

namespace tandem {

class ReferenceForward {
 public:
  // context: the run's length, which picks LongRoPE's long or short factors (0: the short ones).
  explicit ReferenceForward(std::shared_ptr<const Model> model, int context = 0);

  // Runs one token at position pos (positions must come in order 0, 1, 2, ...) and returns the
  // logits for the next token.
  std::vector<double> step(TokenId token, int pos);

 private:
  // A weight matrix dequantized to doubles: rows x cols.
  struct Matrix {
    int64_t rows = 0, cols = 0;
    std::vector<double> v;
  };
  static Matrix load(const Weight& w);
  static std::vector<double> load_vector(const Weight& w);

  struct Layer {
    std::vector<double> attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm, attn_post_norm, ffn_post_norm;
    Matrix wq, wk, wv, wo, w_gate, w_up, w_down;
  };

  std::shared_ptr<const Model> model_;
  ModelConfig cfg_;
  int context_ = 0;
  Matrix output_;
  std::vector<double> output_norm_;
  std::vector<Layer> layers_;
  // KV cache: [layer][position][kv_dim]
  std::vector<std::vector<std::vector<double>>> k_cache_, v_cache_;
};

// Dequantizes any supported GGUF type row to doubles (fp16/bf16 exactly, blocks by their scale).
std::vector<double> reference_dequantize_row(const Weight& w, int64_t row);

}  // namespace tandem
