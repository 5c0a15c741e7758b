#include "devices/opencl/cl_forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tandem::opencl {

ClForward::ClForward(std::shared_ptr<const Model> model, ClForwardOptions options)
    : model_(std::move(model)),
      cfg_(model_->config()),
      context_(options.context > 0 ? options.context : std::min(cfg_.context_length, 4096)),
      max_batch_(std::max(1, std::min(options.max_batch, context_))),
      ops_(std::move(options.ops)) {}

Result<std::unique_ptr<ClForward>> ClForward::create(std::shared_ptr<const Model> model,
                                                     ClForwardOptions options) {
  if (!model) return InvalidArgument("opencl: ClForward::create without a model");
  if (options.context < 0 || options.context > (1 << 20)) {
    return InvalidArgument("context: " + std::to_string(options.context) + " is out of range");
  }
  if (!options.ops) {
    TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Runtime> rt, Runtime::create());
    TANDEM_ASSIGN_OR_RETURN(options.ops, Ops::create(std::move(rt)));
  }
  const ModelConfig& cfg = model->config();
  if (cfg.head_dim > Ops::kMaxHeadDim) {
    return Unsupported("opencl: head_dim " + std::to_string(cfg.head_dim) + " is above " +
                       std::to_string(Ops::kMaxHeadDim));
  }
  std::unique_ptr<ClForward> f(new ClForward(std::move(model), std::move(options)));
  TANDEM_RETURN_IF_ERROR(f->allocate());
  return f;
}

Status ClForward::allocate() {
  const size_t B = size_t(max_batch_), T = size_t(context_), F = sizeof(float);
  const size_t dim = size_t(cfg_.dim), kv = size_t(cfg_.kv_dim()), ffn = size_t(cfg_.ffn_dim);
  const size_t half = size_t(cfg_.head_dim / 2);
  h_tokens_ = memory_.reserve("token ids [B] (int32)", B * sizeof(int32_t));
  h_x_ = memory_.reserve("residual x [B x dim]", B * dim * F);
  h_xb_ = memory_.reserve("normed / matmul out [B x dim]", B * dim * F);
  h_q_ = memory_.reserve("q [B x dim]", B * dim * F);
  h_k_ = memory_.reserve("k [B x kv_dim]", B * kv * F);
  h_v_ = memory_.reserve("v [B x kv_dim]", B * kv * F);
  h_att_ = memory_.reserve("attention out [B x dim]", B * dim * F);
  h_gate_ = memory_.reserve("ffn gate [B x ffn]", B * ffn * F);
  h_up_ = memory_.reserve("ffn up [B x ffn]", B * ffn * F);
  h_cos_ = memory_.reserve("rope cos [B x head_dim/2]", B * half * F);
  h_sin_ = memory_.reserve("rope sin [B x head_dim/2]", B * half * F);
  h_logit_rows_ = memory_.reserve("final normed rows [B x dim]", B * dim * F);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    h_k_cache_.push_back(memory_.reserve("k cache layer " + std::to_string(l), T * kv * F));
    h_v_cache_.push_back(memory_.reserve("v cache layer " + std::to_string(l), kv * T * F));
  }
  TANDEM_RETURN_IF_ERROR(memory_.allocate());
  Runtime& rt = ops_->runtime();
  TANDEM_ASSIGN_OR_RETURN(pool_buf_, rt.wrap_host(memory_.get(0), memory_.total_bytes(), false));

  TANDEM_ASSIGN_OR_RETURN(weights_, ModelWeights::map(rt, *model_));
  return Status::Ok();
}

WeightRef ClForward::weight(const Weight& w) const { return weights_.ref(w); }

BufRef ClForward::pool(size_t handle) const {
  return BufRef{pool_buf_.mem(), size_t(memory_.get_as<char>(handle) - memory_.get_as<char>(0))};
}

Status ClForward::eval_chunk(std::span<const TokenId> tokens, int n_past, const Buffer* logits,
                             size_t logits_offset, bool all_logits) {
  const int n = int(tokens.size());
  const int dim = cfg_.dim, kv_dim = cfg_.kv_dim(), ffn = cfg_.ffn_dim, half = cfg_.head_dim / 2;
  Runtime& rt = ops_->runtime();
  Ops& ops = *ops_;
  const bool half_split = cfg_.rope_style == RopeStyle::kHalfSplit;
  const BufRef x = pool(h_x_), xb = pool(h_xb_), q = pool(h_q_), k = pool(h_k_), v = pool(h_v_);
  const BufRef att = pool(h_att_), gate = pool(h_gate_), up = pool(h_up_);
  const BufRef cs = pool(h_cos_), sn = pool(h_sin_), ids = pool(h_tokens_);
  const size_t base = ids.offset;

  // Host inputs: token ids and the rope tables (the same doubles-then-float values as the CPU's).
  static_assert(sizeof(TokenId) == sizeof(int32_t));
  TANDEM_RETURN_IF_ERROR(rt.host_write(pool_buf_, base, size_t(n) * sizeof(int32_t), [&](void* p) {
    std::memcpy(p, tokens.data(), size_t(n) * sizeof(int32_t));
  }));
  const size_t table_bytes = size_t(n) * size_t(half) * sizeof(float);
  Status rope_status = Status::Ok();
  // Both tables are mapped at once and filled by the one rope rule every fast path shares.
  TANDEM_RETURN_IF_ERROR(rt.host_write(pool_buf_, cs.offset, table_bytes, [&](void* pc) {
    Status inner = rt.host_write(pool_buf_, sn.offset, table_bytes, [&](void* ps) {
      fill_rope_tables(cfg_, n, n_past, static_cast<float*>(pc), static_cast<float*>(ps));
    });
    if (!inner.ok()) rope_status = inner;
  }));
  TANDEM_RETURN_IF_ERROR(rope_status);

  TANDEM_RETURN_IF_ERROR(ops.get_rows(weight(model_->token_embd()), ids, n, x, dim));
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const LayerWeights& L = model_->layers()[size_t(l)];
    const BufRef kc = pool(h_k_cache_[size_t(l)]), vc = pool(h_v_cache_[size_t(l)]);
    // Attention block.
    TANDEM_RETURN_IF_ERROR(ops.rmsnorm(x, weight(L.attn_norm).data, xb, n, dim, cfg_.rms_eps));
    TANDEM_RETURN_IF_ERROR(ops.matmul(weight(L.wq), xb, n, dim, q, dim));
    TANDEM_RETURN_IF_ERROR(ops.matmul(weight(L.wk), xb, n, dim, k, kv_dim));
    TANDEM_RETURN_IF_ERROR(ops.matmul(weight(L.wv), xb, n, dim, v, kv_dim));
    if (cfg_.qkv_bias) {
      TANDEM_RETURN_IF_ERROR(ops.add_bias(q, weight(L.bq).data, n, dim, dim));
      TANDEM_RETURN_IF_ERROR(ops.add_bias(k, weight(L.bk).data, n, kv_dim, kv_dim));
      TANDEM_RETURN_IF_ERROR(ops.add_bias(v, weight(L.bv).data, n, kv_dim, kv_dim));
    }
    TANDEM_RETURN_IF_ERROR(ops.rope_inplace(q, n, dim, cfg_.n_heads, cfg_.head_dim, cs, sn, half_split));
    TANDEM_RETURN_IF_ERROR(ops.rope_inplace(k, n, kv_dim, cfg_.n_kv_heads, cfg_.head_dim, cs, sn, half_split));
    TANDEM_RETURN_IF_ERROR(ops.kv_store(k, v, kc, vc, n, kv_dim, context_, n_past));
    TANDEM_RETURN_IF_ERROR(ops.attention(q, dim, kc, vc, att, dim, n, cfg_.n_heads, cfg_.n_kv_heads,
                                         cfg_.head_dim, context_, n_past));
    TANDEM_RETURN_IF_ERROR(ops.matmul(weight(L.wo), att, n, dim, xb, dim));
    TANDEM_RETURN_IF_ERROR(ops.add_inplace(x, xb, int64_t(n) * dim));
    // Feed-forward block (SwiGLU).
    TANDEM_RETURN_IF_ERROR(ops.rmsnorm(x, weight(L.ffn_norm).data, xb, n, dim, cfg_.rms_eps));
    TANDEM_RETURN_IF_ERROR(ops.matmul(weight(L.w_gate), xb, n, dim, gate, ffn));
    TANDEM_RETURN_IF_ERROR(ops.matmul(weight(L.w_up), xb, n, dim, up, ffn));
    TANDEM_RETURN_IF_ERROR(ops.swiglu_inplace(gate, up, int64_t(n) * ffn));
    TANDEM_RETURN_IF_ERROR(ops.matmul(weight(L.w_down), gate, n, ffn, xb, dim));
    TANDEM_RETURN_IF_ERROR(ops.add_inplace(x, xb, int64_t(n) * dim));
  }

  if (!logits) return Status::Ok();
  const int first = all_logits ? 0 : n - 1;
  const int rows = n - first;
  const BufRef normed = pool(h_logit_rows_);
  TANDEM_RETURN_IF_ERROR(ops.rmsnorm(x.at(size_t(first) * dim * sizeof(float)), weight(model_->output_norm()).data,
                                     normed, rows, dim, cfg_.rms_eps));
  return ops.matmul(weight(model_->output()), normed, rows, dim, BufRef{logits->mem(), logits_offset},
                    cfg_.n_vocab);
}

Status ClForward::eval(std::span<const TokenId> tokens, int n_past, float* logits, bool all_logits) {
  if (tokens.empty()) return InvalidArgument("eval: no tokens");
  if (n_past < 0 || size_t(n_past) + tokens.size() > size_t(context_)) {
    return OutOfRange("eval: positions " + std::to_string(n_past) + ".." +
                      std::to_string(n_past + int64_t(tokens.size())) + " exceed the context of " +
                      std::to_string(context_) + " tokens");
  }
  for (TokenId t : tokens) {
    if (t < 0 || t >= cfg_.n_vocab) {
      return InvalidArgument("eval: token id " + std::to_string(t) + " is outside the vocabulary (" +
                             std::to_string(cfg_.n_vocab) + ")");
    }
  }
  Runtime& rt = ops_->runtime();
  // The caller's logits, wrapped in place for this call.
  Buffer out;
  const size_t out_rows = all_logits ? tokens.size() : 1;
  const size_t out_bytes = out_rows * size_t(cfg_.n_vocab) * sizeof(float);
  if (logits) {
    TANDEM_ASSIGN_OR_RETURN(out, rt.wrap_host(logits, out_bytes, false));
  }
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = std::min(tokens.size() - done, size_t(max_batch_));
    const bool last = done + n == tokens.size();
    const Buffer* dst = logits && (all_logits || last) ? &out : nullptr;
    const size_t dst_offset = all_logits ? done * size_t(cfg_.n_vocab) * sizeof(float) : 0;
    TANDEM_RETURN_IF_ERROR(eval_chunk(tokens.subspan(done, n), n_past + int(done), dst, dst_offset, all_logits));
    done += n;
  }
  if (logits) {
    // Make the device's writes visible to the host (a map: nothing moves on unified memory).
    TANDEM_RETURN_IF_ERROR(rt.host_read(out, 0, out_bytes, [&](const void* p) {
      if (p != logits) std::memcpy(logits, p, out_bytes);
    }));
  }
  return rt.finish();
}

}  // namespace tandem::opencl
