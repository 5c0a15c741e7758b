#include "reference/reference_forward.h"

#include <algorithm>
#include <cmath>

#include "core/half.h"
#include "core/quant.h"

namespace tandem {

std::vector<double> reference_dequantize_row(const Weight& w, int64_t row) {
  std::vector<double> out(size_t(w.cols));
  const uint8_t* p = w.data + size_t(row) * w.row_bytes();
  switch (w.type) {
    case DType::F32:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = reinterpret_cast<const float*>(p)[i];
      break;
    case DType::F16:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = fp16_to_f32(reinterpret_cast<const fp16_t*>(p)[i]);
      break;
    case DType::BF16:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = bf16_to_f32(reinterpret_cast<const bf16_t*>(p)[i]);
      break;
    case DType::Q8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
      for (int64_t i = 0; i < w.cols; ++i)
        out[i] = double(fp16_to_f32(b[i / kQK].d)) * b[i / kQK].qs[i % kQK];
      break;
    }
    case DType::Q4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
      for (int64_t i = 0; i < w.cols; ++i) {
        const BlockQ4_0& blk = b[i / kQK];
        const int j = int(i % kQK);
        const int nibble = j < kQK / 2 ? (blk.qs[j] & 0x0f) : (blk.qs[j - kQK / 2] >> 4);
        out[i] = double(fp16_to_f32(blk.d)) * (nibble - 8);
      }
      break;
    }
    default: {
      // Every other block type: ggml's dequantization (core/quant.h, checked against ggml's own
      // floats) defines the weights; the reference takes those fp32 values as exact.
      std::vector<float> row_f32(size_t(w.cols));
      dequantize_row(w.type, p, row_f32.data(), size_t(w.cols));
      for (int64_t i = 0; i < w.cols; ++i) out[size_t(i)] = row_f32[size_t(i)];
      break;
    }
  }
  return out;
}

ReferenceForward::Matrix ReferenceForward::load(const Weight& w) {
  Matrix m{w.rows, w.cols, {}};
  m.v.reserve(size_t(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    std::vector<double> row = reference_dequantize_row(w, r);
    m.v.insert(m.v.end(), row.begin(), row.end());
  }
  return m;
}

std::vector<double> ReferenceForward::load_vector(const Weight& w) {
  if (!w.present()) return {};
  return reference_dequantize_row(w, 0);
}

ReferenceForward::ReferenceForward(std::shared_ptr<const Model> model, int context)
    : model_(std::move(model)), cfg_(model_->config()), context_(context) {
  output_ = load(model_->output());
  output_norm_ = load_vector(model_->output_norm());
  for (const LayerWeights& l : model_->layers()) {
    layers_.push_back(Layer{load_vector(l.attn_norm), load_vector(l.ffn_norm), load_vector(l.bq), load_vector(l.bk),
                            load_vector(l.bv), load_vector(l.q_norm), load_vector(l.k_norm),
                            load_vector(l.attn_post_norm), load_vector(l.ffn_post_norm), load(l.wq), load(l.wk),
                            load(l.wv), load(l.wo), load(l.w_gate), load(l.w_up), load(l.w_down)});
  }
  k_cache_.resize(layers_.size());
  v_cache_.resize(layers_.size());
}

namespace {

// out = W x, W is rows x cols.
template <class M>
std::vector<double> matvec(const M& w, const std::vector<double>& x) {
  std::vector<double> out(size_t(w.rows), 0.0);
  for (int64_t r = 0; r < w.rows; ++r) {
    double s = 0.0;
    for (int64_t c = 0; c < w.cols; ++c) s += w.v[size_t(r * w.cols + c)] * x[size_t(c)];
    out[size_t(r)] = s;
  }
  return out;
}

std::vector<double> rmsnorm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale * w[i];
  return out;
}

// RMSNorm of each head_dim-sized head of x on its own, with one gain for every head.
void head_norm(std::vector<double>& x, const std::vector<double>& w, int head_dim, double eps) {
  for (size_t h = 0; h * size_t(head_dim) < x.size(); ++h) {
    std::vector<double> head(x.begin() + long(h * head_dim), x.begin() + long((h + 1) * head_dim));
    head = rmsnorm(head, w, eps);
    std::copy(head.begin(), head.end(), x.begin() + long(h * head_dim));
  }
}

void add_bias(std::vector<double>& x, const std::vector<double>& b) {
  for (size_t i = 0; i < b.size(); ++i) x[i] += b[i];
}

// Rotates each head's pairs by the position's angles. A local (sliding-window) layer of a model
// with a local base rotates with that base and nothing else; otherwise the global base, linear
// scaling, per-frequency divisors (LongRoPE's long ones past the original context) and the
// cos/sin multiplier apply.
void rope(std::vector<double>& x, int n_heads, const ModelConfig& c, int pos, bool local, int context) {
  const int hd = c.head_dim, half = hd / 2;
  const bool own_local = local && c.sliding_window > 0 && c.rope_base_swa > 0;
  const std::vector<float>& divisors =
      !c.rope_long_factors.empty() && context > c.rope_original_context ? c.rope_long_factors : c.rope_freq_factors;
  for (int h = 0; h < n_heads; ++h) {
    for (int i = 0; i < half; ++i) {
      double freq = std::pow(double(own_local ? c.rope_base_swa : c.rope_base), -2.0 * i / hd);
      double theta = double(pos) * freq;
      double mag = c.rope_attn_factor;
      if (!own_local) {
        if (!divisors.empty()) theta /= divisors[size_t(i)];
        theta *= c.rope_freq_scale;
      }
      const bool half_split = c.rope_style == RopeStyle::kHalfSplit;
      const size_t i0 = size_t(h * hd + (half_split ? i : 2 * i));
      const size_t i1 = size_t(h * hd + (half_split ? i + half : 2 * i + 1));
      const double a = x[i0], b = x[i1];
      x[i0] = mag * (a * std::cos(theta) - b * std::sin(theta));
      x[i1] = mag * (a * std::sin(theta) + b * std::cos(theta));
    }
  }
}

double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
double silu(double x) { return x / (1.0 + std::exp(-x)); }

}  // namespace

std::vector<double> ReferenceForward::step(TokenId token, int pos) {
  const int dim = cfg_.dim, hd = cfg_.head_dim;
  const int group = cfg_.n_heads / cfg_.n_kv_heads;

  // x = embedding of the token
  // (one row, dequantized when it is read: the table is the vocabulary's size, a step needs one)
  std::vector<double> x = reference_dequantize_row(model_->token_embd(), token);
  if (cfg_.arch == Arch::kGemma2 || cfg_.arch == Arch::kGemma3) {
    for (double& v : x) v *= std::sqrt(double(dim));  // Gemma scales its embeddings by sqrt(dim)
  }

  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    // Of every swa_period layers the last is global (llama.cpp's pattern); window 0: all global.
    const int period = cfg_.swa_period;
    const bool local = cfg_.sliding_window > 0 && (period <= 1 || int(l) % period < period - 1);

    // --- attention ---
    std::vector<double> xn = rmsnorm(x, L.attn_norm, cfg_.rms_eps);
    std::vector<double> q = matvec(L.wq, xn), k = matvec(L.wk, xn), v = matvec(L.wv, xn);
    if (cfg_.qkv_bias) add_bias(q, L.bq), add_bias(k, L.bk), add_bias(v, L.bv);
    if (cfg_.qk_norm) head_norm(q, L.q_norm, hd, cfg_.rms_eps), head_norm(k, L.k_norm, hd, cfg_.rms_eps);
    rope(q, cfg_.n_heads, cfg_, pos, local, context_);
    rope(k, cfg_.n_kv_heads, cfg_, pos, local, context_);
    k_cache_[l].resize(size_t(pos) + 1);
    v_cache_[l].resize(size_t(pos) + 1);
    k_cache_[l][size_t(pos)] = k;
    v_cache_[l][size_t(pos)] = v;

    std::vector<double> att(size_t(cfg_.n_heads * hd), 0.0);
    for (int h = 0; h < cfg_.n_heads; ++h) {
      const int kvh = h / group;  // grouped-query attention: heads share KV heads
      // A local layer's query sees the last sliding_window positions, itself included.
      const int first = local ? std::max(0, pos + 1 - cfg_.sliding_window) : 0;
      std::vector<double> scores(size_t(pos) + 1, 0.0);
      double mx = -INFINITY;
      for (int t = first; t <= pos; ++t) {
        double s = 0.0;
        for (int d = 0; d < hd; ++d) s += q[size_t(h * hd + d)] * k_cache_[l][size_t(t)][size_t(kvh * hd + d)];
        s *= double(cfg_.query_scale);
        if (cfg_.attn_softcap > 0) s = cfg_.attn_softcap * std::tanh(s / cfg_.attn_softcap);
        scores[size_t(t)] = s;
        mx = std::max(mx, s);
      }
      double sum = 0.0;
      for (int t = first; t <= pos; ++t) sum += (scores[size_t(t)] = std::exp(scores[size_t(t)] - mx));
      for (int t = first; t <= pos; ++t)
        for (int d = 0; d < hd; ++d)
          att[size_t(h * hd + d)] += scores[size_t(t)] / sum * v_cache_[l][size_t(t)][size_t(kvh * hd + d)];
    }
    std::vector<double> o = matvec(L.wo, att);
    if (!L.attn_post_norm.empty()) o = rmsnorm(o, L.attn_post_norm, cfg_.rms_eps);
    for (int i = 0; i < dim; ++i) x[size_t(i)] += o[size_t(i)];

    // --- feed-forward: down(act(gate(x)) * up(x)) ---
    xn = rmsnorm(x, L.ffn_norm, cfg_.rms_eps);
    std::vector<double> g = matvec(L.w_gate, xn), u = matvec(L.w_up, xn);
    const bool gelu = cfg_.activation == Activation::kGeluTanh;
    for (size_t i = 0; i < g.size(); ++i) g[i] = (gelu ? gelu_tanh(g[i]) : silu(g[i])) * u[i];
    std::vector<double> d = matvec(L.w_down, g);
    if (!L.ffn_post_norm.empty()) d = rmsnorm(d, L.ffn_post_norm, cfg_.rms_eps);
    for (int i = 0; i < dim; ++i) x[size_t(i)] += d[size_t(i)];
  }

  std::vector<double> logits = matvec(output_, rmsnorm(x, output_norm_, cfg_.rms_eps));
  if (cfg_.final_softcap > 0)
    for (double& v : logits) v = cfg_.final_softcap * std::tanh(v / cfg_.final_softcap);
  return logits;
}

}  // namespace tandem
