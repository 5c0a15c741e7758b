#include "model/model.h"

#include <map>

#include "model/gguf/gguf.h"

namespace tandem {
namespace {

// Binds a tensor by name and checks its shape. expected_rows == 0 means 1-D of expected_cols.
class Binder {
 public:
  explicit Binder(const gguf::GgufFile& f) : f_(f) {}

  Status bind(Weight& w, const std::string& name, int64_t expected_rows, int64_t expected_cols,
              bool required = true) {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    if (!t) {
      if (!required) return Status::Ok();
      return InvalidArgument(f_.path() + ": tensor '" + name + "' is missing");
    }
    const bool is_1d = expected_rows == 0;
    const int64_t cols = int64_t(t->dims[0]);
    const int64_t rows = t->dims.size() > 1 ? int64_t(t->dims[1]) : 1;
    const bool extra_dims = t->dims.size() > 2 && (t->dims[2] != 1 || (t->dims.size() > 3 && t->dims[3] != 1));
    if (cols != expected_cols || rows != (is_1d ? 1 : expected_rows) || extra_dims) {
      return InvalidArgument(f_.path() + ": tensor '" + name + "': shape " + shape(*t) +
                             ", expected [" + std::to_string(expected_cols) +
                             (is_1d ? "" : ", " + std::to_string(expected_rows)) + "]");
    }
    if (is_1d && t->type != DType::F32) {
      return Unsupported(f_.path() + ": tensor '" + name + "': 1-D tensors must be f32, found " +
                         std::string(dtype_name(t->type)));
    }
    w = Weight{name, t->type, t->data, rows, cols};
    return Status::Ok();
  }

 private:
  static std::string shape(const gguf::TensorInfo& t) {
    std::string s = "[";
    for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
    return s + "]";
  }
  const gguf::GgufFile& f_;
};

// Row range [begin, begin + rows) of a bound 2-D weight, as a weight of its own.
Weight row_view(const Weight& w, const std::string& part, int64_t begin, int64_t rows) {
  return Weight{w.name + "[" + part + "]", w.type, w.data + size_t(begin) * w.row_bytes(), rows, w.cols};
}

}  // namespace

std::vector<const Weight*> LayerWeights::present() const {
  std::vector<const Weight*> out;
  for (const Weight* w : {&attn_norm, &wq, &wk, &wv, &bq, &bk, &bv, &q_norm, &k_norm, &wo, &attn_post_norm, &ffn_norm,
                          &w_gate, &w_up, &w_down, &ffn_post_norm})
    if (w->rows > 0) out.push_back(w);
  return out;
}

Result<std::shared_ptr<Model>> Model::load(const std::string& path) {
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> file, gguf::GgufFile::open(path));
  return from_gguf(std::move(file));
}

Result<std::shared_ptr<Model>> Model::from_gguf(std::shared_ptr<gguf::GgufFile> file) {
  std::shared_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  const gguf::GgufFile& f = *m->file_;
  TANDEM_ASSIGN_OR_RETURN(m->config_, read_model_config(f));
  const ModelConfig& c = m->config_;

  Binder b(f);
  TANDEM_RETURN_IF_ERROR(b.bind(m->token_embd_, "token_embd.weight", c.n_vocab, c.dim));
  TANDEM_RETURN_IF_ERROR(b.bind(m->output_norm_, "output_norm.weight", 0, c.dim));
  if (c.tied_embeddings) {
    m->output_ = m->token_embd_;
  } else {
    TANDEM_RETURN_IF_ERROR(b.bind(m->output_, "output.weight", c.n_vocab, c.dim));
  }
  m->layers_.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = m->layers_[size_t(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    TANDEM_RETURN_IF_ERROR(b.bind(l.attn_norm, p + "attn_norm.weight", 0, c.dim));
    if (c.fused_qkv) {
      Weight qkv;
      TANDEM_RETURN_IF_ERROR(b.bind(qkv, p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.dim));
      l.wq = row_view(qkv, "q", 0, c.q_dim());
      l.wk = row_view(qkv, "k", c.q_dim(), c.kv_dim());
      l.wv = row_view(qkv, "v", c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      TANDEM_RETURN_IF_ERROR(b.bind(l.wq, p + "attn_q.weight", c.q_dim(), c.dim));
      TANDEM_RETURN_IF_ERROR(b.bind(l.wk, p + "attn_k.weight", c.kv_dim(), c.dim));
      TANDEM_RETURN_IF_ERROR(b.bind(l.wv, p + "attn_v.weight", c.kv_dim(), c.dim));
    }
    TANDEM_RETURN_IF_ERROR(b.bind(l.wo, p + "attn_output.weight", c.dim, c.q_dim()));
    TANDEM_RETURN_IF_ERROR(b.bind(l.q_norm, p + "attn_q_norm.weight", 0, c.head_dim, c.qk_norm));
    TANDEM_RETURN_IF_ERROR(b.bind(l.k_norm, p + "attn_k_norm.weight", 0, c.head_dim, c.qk_norm));
    TANDEM_RETURN_IF_ERROR(b.bind(l.bq, p + "attn_q.bias", 0, c.q_dim(), c.qkv_bias));
    TANDEM_RETURN_IF_ERROR(b.bind(l.bk, p + "attn_k.bias", 0, c.kv_dim(), c.qkv_bias));
    TANDEM_RETURN_IF_ERROR(b.bind(l.bv, p + "attn_v.bias", 0, c.kv_dim(), c.qkv_bias));
    TANDEM_RETURN_IF_ERROR(b.bind(l.attn_post_norm, p + "post_attention_norm.weight", 0, c.dim, c.post_norms));
    TANDEM_RETURN_IF_ERROR(b.bind(l.ffn_norm, p + "ffn_norm.weight", 0, c.dim));
    if (c.fused_gate_up) {  // [gate; up], the gate first (llama.cpp's swiglu of a fused row)
      Weight gate_up;
      TANDEM_RETURN_IF_ERROR(b.bind(gate_up, p + "ffn_up.weight", 2 * int64_t(c.ffn_dim), c.dim));
      l.w_gate = row_view(gate_up, "gate", 0, c.ffn_dim);
      l.w_up = row_view(gate_up, "up", c.ffn_dim, c.ffn_dim);
    } else {
      TANDEM_RETURN_IF_ERROR(b.bind(l.w_gate, p + "ffn_gate.weight", c.ffn_dim, c.dim));
      TANDEM_RETURN_IF_ERROR(b.bind(l.w_up, p + "ffn_up.weight", c.ffn_dim, c.dim));
    }
    TANDEM_RETURN_IF_ERROR(b.bind(l.w_down, p + "ffn_down.weight", c.dim, c.ffn_dim));
    TANDEM_RETURN_IF_ERROR(b.bind(l.ffn_post_norm, p + "post_ffw_norm.weight", 0, c.dim, c.post_norms));
  }

  // read_model_config() made the token list and token_embd.weight agree (one row per token).
  TANDEM_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::from_gguf(f));
  return m;
}

std::vector<const Weight*> Model::all_weights() const {
  std::vector<const Weight*> out = {&token_embd_, &output_norm_};
  if (!config_.tied_embeddings) out.push_back(&output_);
  for (const LayerWeights& l : layers_)
    for (const Weight* w : l.present()) out.push_back(w);
  return out;
}

uint64_t Model::weight_bytes() const {
  uint64_t total = 0;
  if (!file_) {
    for (const Weight* w : all_weights()) total += w->n_bytes();
    return total;
  }
  for (const gguf::TensorInfo& t : file_->tensors()) total += t.n_bytes;
  return total;
}

uint64_t Model::n_params() const {
  uint64_t total = 0;
  if (!file_) {
    for (const Weight* w : all_weights()) total += uint64_t(w->rows) * uint64_t(w->cols);
    return total;
  }
  for (const gguf::TensorInfo& t : file_->tensors()) total += t.n_elements();
  return total;
}

std::string Model::weight_type_summary() const { return std::string(dtype_name(dominant_weight_type())); }

DType Model::dominant_weight_type() const {
  // The type holding the most bytes of 2-D weights names the model, as llama-bench does.
  std::map<DType, uint64_t> bytes;
  if (!file_) {
    for (const Weight* w : all_weights())
      if (w->rows > 1) bytes[w->type] += w->n_bytes();
  } else {
    for (const gguf::TensorInfo& t : file_->tensors())
      if (t.dims.size() >= 2) bytes[t.type] += t.n_bytes;
  }
  DType best = DType::F32;
  uint64_t most = 0;
  for (auto [type, b] : bytes)
    if (b > most) most = b, best = type;
  return best;
}

std::shared_ptr<Model> Model::shape_only(ModelConfig c, DType matrix_type) {
  std::shared_ptr<Model> m(new Model());
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) { return Weight{name, matrix_type, nullptr, rows, cols}; };
  auto vec = [&](const std::string& name, int64_t n) { return Weight{name, DType::F32, nullptr, 1, n}; };
  m->token_embd_ = matrix("token_embd.weight", c.n_vocab, c.dim);
  m->output_norm_ = vec("output_norm.weight", c.dim);
  m->output_ = c.tied_embeddings ? m->token_embd_ : matrix("output.weight", c.n_vocab, c.dim);
  m->layers_.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = m->layers_[size_t(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    l.attn_norm = vec(p + "attn_norm.weight", c.dim);
    l.wq = matrix(p + "attn_q.weight", c.q_dim(), c.dim);
    l.wk = matrix(p + "attn_k.weight", c.kv_dim(), c.dim);
    l.wv = matrix(p + "attn_v.weight", c.kv_dim(), c.dim);
    l.wo = matrix(p + "attn_output.weight", c.dim, c.q_dim());
    if (c.qk_norm) {
      l.q_norm = vec(p + "attn_q_norm.weight", c.head_dim);
      l.k_norm = vec(p + "attn_k_norm.weight", c.head_dim);
    }
    if (c.qkv_bias) {
      l.bq = vec(p + "attn_q.bias", c.q_dim());
      l.bk = vec(p + "attn_k.bias", c.kv_dim());
      l.bv = vec(p + "attn_v.bias", c.kv_dim());
    }
    l.ffn_norm = vec(p + "ffn_norm.weight", c.dim);
    l.w_gate = matrix(p + "ffn_gate.weight", c.ffn_dim, c.dim);
    l.w_up = matrix(p + "ffn_up.weight", c.ffn_dim, c.dim);
    l.w_down = matrix(p + "ffn_down.weight", c.dim, c.ffn_dim);
    if (c.post_norms) {
      l.attn_post_norm = vec(p + "post_attention_norm.weight", c.dim);
      l.ffn_post_norm = vec(p + "post_ffw_norm.weight", c.dim);
    }
  }
  m->config_ = std::move(c);
  return m;
}

}  // namespace tandem
