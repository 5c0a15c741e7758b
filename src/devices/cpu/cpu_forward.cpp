#include "devices/cpu/cpu_forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "devices/cpu/attention.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/ops.h"

namespace tandem::cpu {
namespace {

WeightView view(const Weight& w) {
  return WeightView{w.type, w.data, w.rows, w.cols, w.row_bytes()};
}

}  // namespace

CpuForward::CpuForward(std::shared_ptr<const Model> model, ForwardOptions options)
    : model_(std::move(model)),
      cfg_(model_->config()),
      context_(options.context > 0 ? options.context : std::min(cfg_.context_length, 4096)),
      max_batch_(std::max(1, std::min(options.max_batch, context_))),
      pool_(options.n_threads) {}

Result<std::unique_ptr<CpuForward>> CpuForward::create(std::shared_ptr<const Model> model,
                                                       ForwardOptions options) {
  if (options.n_threads < 1 || options.n_threads > 512) {
    return InvalidArgument("threads: " + std::to_string(options.n_threads) +
                           " is out of range (1..512)");
  }
  if (options.context < 0 || options.context > (1 << 20)) {
    return InvalidArgument("context: " + std::to_string(options.context) + " is out of range");
  }
  std::unique_ptr<CpuForward> f(new CpuForward(std::move(model), options));
  TANDEM_RETURN_IF_ERROR(f->allocate());
  return f;
}

Status CpuForward::allocate() {
  const size_t B = size_t(max_batch_), T = size_t(context_), F = sizeof(float);
  const size_t dim = size_t(cfg_.dim), kv = size_t(cfg_.kv_dim()), ffn = size_t(cfg_.ffn_dim);
  // Activations for one chunk of B tokens: slots every layer works in, in turn.
  const int L = cfg_.n_layers;
  h_x_ = memory_.reserve("residual x [B x dim]", B * dim * F, L);
  h_xb_ = memory_.reserve("normed / attention out [B x dim]", B * dim * F, L);
  h_q_ = memory_.reserve("q [B x dim]", B * dim * F, L);
  h_k_ = memory_.reserve("k [B x kv_dim]", B * kv * F, L);
  h_v_ = memory_.reserve("v [B x kv_dim]", B * kv * F, L);
  h_att_ = memory_.reserve("attention out [B x dim]", B * dim * F, L);
  h_gate_ = memory_.reserve("ffn gate [B x ffn]", B * ffn * F, L);
  h_up_ = memory_.reserve("ffn up [B x ffn]", B * ffn * F, L);
  // Attention scores: one [B x T] block per thread (threads take whole heads).
  h_scores_ = memory_.reserve("attention scores [threads x B x T]", size_t(pool_.size()) * B * T * F, L);
  h_cos_ = memory_.reserve("rope cos [B x head_dim/2]", B * size_t(cfg_.head_dim / 2) * F, L);
  h_sin_ = memory_.reserve("rope sin [B x head_dim/2]", B * size_t(cfg_.head_dim / 2) * F, L);
  h_logit_rows_ = memory_.reserve("final normed rows [B x dim]", B * dim * F);
  // KV cache: keys [T x kv_dim] per layer (a row per position); values transposed,
  // [kv_dim x T] per layer, so that probabilities x values is a matmul over positions.
  for (int l = 0; l < cfg_.n_layers; ++l) {
    h_k_cache_.push_back(memory_.reserve("k cache layer " + std::to_string(l), T * kv * F));
    h_v_cache_.push_back(memory_.reserve("v cache layer " + std::to_string(l), kv * T * F));
  }
  return memory_.allocate();
}

void CpuForward::fill_rope_tables(int n, int n_past) {
  tandem::fill_rope_tables(cfg_, n, n_past, memory_.get_as<float>(h_cos_), memory_.get_as<float>(h_sin_));
}

void CpuForward::attention(int layer, int n, int n_past) {
  cpu::attention(pool_, memory_.get_as<float>(h_q_), cfg_.dim, memory_.get_as<float>(h_k_cache_[size_t(layer)]),
                 memory_.get_as<float>(h_v_cache_[size_t(layer)]), memory_.get_as<float>(h_att_), cfg_.dim, n,
                 cfg_.n_heads, cfg_.n_kv_heads, cfg_.head_dim, context_, n_past, memory_.get_as<float>(h_scores_),
                 int64_t(max_batch_) * context_);
}

void CpuForward::eval_chunk(std::span<const TokenId> tokens, int n_past, float* logits,
                            bool all_logits) {
  const int n = int(tokens.size());
  const int dim = cfg_.dim, kv_dim = cfg_.kv_dim(), ffn = cfg_.ffn_dim;
  float* x = memory_.get_as<float>(h_x_);
  float* xb = memory_.get_as<float>(h_xb_);
  float* q = memory_.get_as<float>(h_q_);
  float* k = memory_.get_as<float>(h_k_);
  float* v = memory_.get_as<float>(h_v_);
  float* att = memory_.get_as<float>(h_att_);
  float* gate = memory_.get_as<float>(h_gate_);
  float* up = memory_.get_as<float>(h_up_);
  const bool half_split = cfg_.rope_style == RopeStyle::kHalfSplit;

  const WeightView embd = view(model_->token_embd());
  for (int i = 0; i < n; ++i) dequantize_row(embd, tokens[size_t(i)], x + size_t(i) * dim);
  fill_rope_tables(n, n_past);
  const float* cs = memory_.get_as<float>(h_cos_);
  const float* sn = memory_.get_as<float>(h_sin_);

  for (int l = 0; l < cfg_.n_layers; ++l) {
    const LayerWeights& L = model_->layers()[size_t(l)];
    // Attention block.
    rmsnorm(pool_, x, L.attn_norm.f32(), xb, n, dim, cfg_.rms_eps);
    matmul(pool_, view(L.wq), xb, n, dim, q, dim);
    matmul(pool_, view(L.wk), xb, n, dim, k, kv_dim);
    matmul(pool_, view(L.wv), xb, n, dim, v, kv_dim);
    if (cfg_.qkv_bias) {
      add_bias(q, L.bq.f32(), n, dim, dim);
      add_bias(k, L.bk.f32(), n, kv_dim, kv_dim);
      add_bias(v, L.bv.f32(), n, kv_dim, kv_dim);
    }
    rope_inplace(q, n, dim, cfg_.n_heads, cfg_.head_dim, cs, sn, half_split);
    rope_inplace(k, n, kv_dim, cfg_.n_kv_heads, cfg_.head_dim, cs, sn, half_split);
    float* kc = memory_.get_as<float>(h_k_cache_[size_t(l)]);
    float* vc = memory_.get_as<float>(h_v_cache_[size_t(l)]);
    kv_store(k, kv_dim, v, kv_dim, n, kv_dim, kc, vc, context_, n_past);
    attention(l, n, n_past);
    matmul(pool_, view(L.wo), att, n, dim, xb, dim);
    add_inplace(x, xb, int64_t(n) * dim);

    // Feed-forward block (SwiGLU).
    rmsnorm(pool_, x, L.ffn_norm.f32(), xb, n, dim, cfg_.rms_eps);
    matmul(pool_, view(L.w_gate), xb, n, dim, gate, ffn);
    matmul(pool_, view(L.w_up), xb, n, dim, up, ffn);
    swiglu_inplace(gate, up, int64_t(n) * ffn);
    matmul(pool_, view(L.w_down), gate, n, ffn, xb, dim);
    add_inplace(x, xb, int64_t(n) * dim);
  }

  // Logits for the last row, or for all rows.
  if (!logits) return;
  const int first = all_logits ? 0 : n - 1;
  const int rows = n - first;
  float* normed = memory_.get_as<float>(h_logit_rows_);
  rmsnorm(pool_, x + size_t(first) * dim, model_->output_norm().f32(), normed, rows, dim,
          cfg_.rms_eps);
  matmul(pool_, view(model_->output()), normed, rows, dim, logits, cfg_.n_vocab);
}

Status CpuForward::eval(std::span<const TokenId> tokens, int n_past, float* logits,
                        bool all_logits) {
  if (tokens.empty()) return InvalidArgument("eval: no tokens");
  if (n_past < 0 || size_t(n_past) + tokens.size() > size_t(context_)) {
    return OutOfRange("eval: positions " + std::to_string(n_past) + ".." +
                      std::to_string(n_past + int64_t(tokens.size())) +
                      " exceed the context of " + std::to_string(context_) + " tokens");
  }
  for (TokenId t : tokens) {
    if (t < 0 || t >= cfg_.n_vocab) {
      return InvalidArgument("eval: token id " + std::to_string(t) + " is outside the vocabulary (" +
                             std::to_string(cfg_.n_vocab) + ")");
    }
  }
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = std::min(tokens.size() - done, size_t(max_batch_));
    const bool last = done + n == tokens.size();
    // Without all_logits only the final chunk computes logits (its last row).
    float* out = all_logits ? logits + done * size_t(cfg_.n_vocab) : (last ? logits : nullptr);
    eval_chunk(tokens.subspan(done, n), n_past + int(done), out, all_logits);
    done += n;
  }
  return Status::Ok();
}

}  // namespace tandem::cpu
