#include "graph/transformer_graph.h"

#include <algorithm>

#include <cmath>

namespace tandem::graph {


BufferPlan::BufferPlan(MemoryPool& pool, const ModelConfig& c, int max_batch, int context, int slot_rows,
                       KvGeometry kv_pages, int n_seq)
    : max_batch_(max_batch),
      context_(context),
      slot_rows_(std::max(slot_rows, max_batch)),
      n_seq_(std::max(n_seq, 1)),
      kv_pages_(kv_pages) {
  const size_t B = size_t(slot_rows_), T = size_t(context), F = sizeof(float);
  const size_t dim = size_t(c.dim), qd = size_t(c.q_dim()), kv = size_t(c.kv_dim()), ffn = size_t(c.ffn_dim),
               half = size_t(c.head_dim / 2);
  // One slot per activation, reused by every layer in turn; only the KV cache is per layer.
  const int L = c.n_layers;
  x_ = pool.reserve("residual x [B x dim]", B * dim * F, L);
  xb_ = pool.reserve("normed / projected [B x dim]", B * dim * F, L);
  q_ = pool.reserve("q [B x q_dim]", B * qd * F, L);
  k_ = pool.reserve("k [B x kv_dim]", B * kv * F, L);
  v_ = pool.reserve("v [B x kv_dim]", B * kv * F, L);
  att_ = pool.reserve("attention out [B x q_dim]", B * qd * F, L);
  gate_ = pool.reserve("ffn gate [B x ffn]", B * ffn * F, L);
  up_ = pool.reserve("ffn up [B x ffn]", B * ffn * F, L);
  cos_ = pool.reserve("rope cos [B x head_dim/2]", B * half * F, L);
  sin_ = pool.reserve("rope sin [B x head_dim/2]", B * half * F, L);
  local_rope_ = c.has_local_rope();
  if (local_rope_) {
    cos_local_ = pool.reserve("local layers' rope cos [B x head_dim/2]", B * half * F, L);
    sin_local_ = pool.reserve("local layers' rope sin [B x head_dim/2]", B * half * F, L);
  }
  normed_ = pool.reserve("final normed rows [B x dim]", B * dim * F);
  ids_ = pool.reserve("token ids [B]", B * sizeof(int32_t), L);
  for (int seq = 0; seq < n_seq_; ++seq) {
    const std::string whose = n_seq_ > 1 ? "sequence " + std::to_string(seq) + " " : "";
    for (int l = 0; l < c.n_layers; ++l) {
      const std::string layer = whose + "layer " + std::to_string(l);
      if (kv_pages_.capacity > 0) {
        const std::string how = " (" + std::string(kv_layout_name(kv_pages_.layout)) + " ";
        k_cache_.push_back(pool.reserve("k cache " + layer + how + std::string(dtype_name(kv_pages_.type)) + ")",
                                        size_t(kv_pages_.bytes())));
        v_cache_.push_back(pool.reserve("v cache " + layer + how + std::string(dtype_name(kv_pages_.v_type)) + ")",
                                        size_t(kv_pages_.values().bytes())));
        kv_bytes_ += kv_pages_.bytes() + kv_pages_.values().bytes();
        continue;
      }
      k_cache_.push_back(pool.reserve("k cache " + layer, T * kv * F));
      v_cache_.push_back(pool.reserve("v cache " + layer, kv * T * F));
      kv_bytes_ += 2 * T * kv * F;
    }
  }
}

std::string describe_kv(const KvGeometry& g, const std::string& why) {
  std::string s = g.capacity == 0 ? std::string("f32 keys, f32 values: the host layout (keys by row, values transposed)")
                                  : std::string(dtype_name(g.type)) + " keys, " + std::string(dtype_name(g.v_type)) +
                                        " values: " + std::string(kv_layout_name(g.layout)) + " rows";
  return why.empty() ? s : s + "; " + why;
}

Result<KvGeometry> kv_cache_geometry(const ModelConfig& c, int context, DType k, DType v) {
  TANDEM_RETURN_IF_ERROR(check_kv_type(k, uint32_t(c.head_dim), "--cache-type-k"));
  TANDEM_RETURN_IF_ERROR(check_kv_type(v, uint32_t(c.head_dim), "--cache-type-v"));
  if (k == DType::F32 && v == DType::F32) return KvGeometry{0, 1, 0, 0, KvLayout::kTokenMajor, k, v};
  // Head-major: a head's keys (and values) are one contiguous run, which decode attention streams
  // a head at a time (bench/attention_bench: depth 4096, 2 threads, Emerald Rapids, 11.2 ms a
  // token-major token against 8.7); a token's append writes one short row per head instead of one
  // row per cache.
  return KvGeometry{uint32_t(context), uint32_t(c.n_kv_heads), uint32_t(c.head_dim), uint32_t(context),
                    KvLayout::kHeadMajor, k, v};
}

Buffers BufferPlan::bind(const MemoryPool& p) const {
  Buffers b;
  b.max_batch = max_batch_;
  b.slot_rows = slot_rows_;
  b.context = context_;
  b.n_seq = n_seq_;
  b.x = p.get_as<float>(x_), b.xb = p.get_as<float>(xb_), b.q = p.get_as<float>(q_);
  b.k = p.get_as<float>(k_), b.v = p.get_as<float>(v_), b.att = p.get_as<float>(att_);
  b.gate = p.get_as<float>(gate_), b.up = p.get_as<float>(up_);
  b.cos = p.get_as<float>(cos_), b.sin = p.get_as<float>(sin_), b.normed = p.get_as<float>(normed_);
  b.cos_local = local_rope_ ? p.get_as<float>(cos_local_) : b.cos;
  b.sin_local = local_rope_ ? p.get_as<float>(sin_local_) : b.sin;
  b.ids = p.get_as<int32_t>(ids_);
  b.kv_pages = kv_pages_;
  b.kv_bytes = kv_bytes_;
  for (size_t i = 0; i < k_cache_.size(); ++i) {
    if (kv_pages_.capacity > 0) {
      b.k_pages.push_back(p.get_as<uint8_t>(k_cache_[i]));
      b.v_pages.push_back(p.get_as<uint8_t>(v_cache_[i]));
    } else {
      b.k_cache.push_back(p.get_as<float>(k_cache_[i]));
      b.v_cache.push_back(p.get_as<float>(v_cache_[i]));
    }
  }
  return b;
}

void prepare_chunk(const ModelConfig& c, const Buffers& b, const int32_t* tokens, int n, int n_past) {
  const SequenceRows whole{0, 0, n, n_past, false};
  prepare_sequences(c, b, tokens, std::span(&whole, 1));
}

void prepare_sequences(const ModelConfig& c, const Buffers& b, const int32_t* tokens, std::span<const SequenceRows> parts) {
  const size_t half = size_t(c.head_dim / 2);
  for (const SequenceRows& p : parts) {
    for (int r = p.row; r < p.row + p.n; ++r) b.ids[r] = tokens[r];
    const size_t at = size_t(p.row) * half;  // the part's rows of the rope tables
    fill_rope_tables(rope_params(c, false, b.context), c.head_dim, p.n, p.n_past, b.cos + at, b.sin + at);
    if (b.cos_local != b.cos)
      fill_rope_tables(rope_params(c, true, b.context), c.head_dim, p.n, p.n_past, b.cos_local + at, b.sin_local + at);
  }
}

namespace {

Act rows(float* data, int n, int64_t width) { return Act{data, n, width, width}; }

OpCall elementwise(OpKind kind, Act out, Act a) {
  OpCall c;
  c.kind = kind;
  c.out = out;
  c.a = a;
  return c;
}

OpCall rmsnorm(const Weight& gain, Act x, Act out, float eps) {
  OpCall c = elementwise(OpKind::kRmsNorm, out, x);
  c.weight = &gain;
  c.eps = eps;
  return c;
}

OpCall matmul(const Weight& w, Act x, float* y, int64_t ldy) {
  return OpCall::matmul(&w, 0, w.rows, x.data, x.rows, x.ld, y, ldy);
}

// A layer matmul between activation slots of the pool, which hold slot_rows rows each: a
// static-shape device may pad the row count up inside them (Act::capacity).
OpCall slot_matmul(const Buffers& b, const Weight& w, Act x, float* y, int64_t ldy) {
  OpCall c = matmul(w, x, y, ldy);
  c.a.capacity = b.slot_rows;
  c.out.capacity = b.slot_rows;
  return c;
}

// A layer's row op (norm, activation, residual add) between activation slots: like a layer
// matmul, a static-shape device may pad its rows up inside them.
OpCall slot_op(const Buffers& b, OpCall c) {
  c.a.capacity = b.slot_rows;
  c.out.capacity = b.slot_rows;
  return c;
}

// Layer l's KV cache of sequence seq, in whichever layout the buffers hold it.
void set_kv(const Buffers& b, int seq, int l, OpCall& c) {
  const size_t at = size_t(seq) * (b.kv_pages.capacity > 0 ? b.k_pages.size() : b.k_cache.size()) / size_t(b.n_seq) + size_t(l);
  if (b.kv_pages.capacity > 0) {
    c.kv_pages = b.kv_pages;
    c.k_pages = b.k_pages[at];
    c.v_pages = b.v_pages[at];
  } else {
    c.k_cache = b.k_cache[at];
    c.v_cache = b.v_cache[at];
  }
}

// The rows a part of the chunk owns inside an activation slot of `width` columns.
Act part_rows(const Buffers& b, float* slot, const SequenceRows& p, int64_t width) {
  Act a = rows(slot + int64_t(p.row) * width, p.n, width);
  a.capacity = b.slot_rows - p.row;  // a static-shape device may pad up to the slot's end
  return a;
}

}  // namespace

bool is_layer_matmul(const Model& model, const OpCall& op) {
  return op.kind == OpKind::kMatmul && op.weight != &model.output() && op.weight != &model.token_embd();
}

namespace {

// The ops of a chunk of `n` rows made of `parts`; all_logits (one part only) asks every row's.
std::vector<OpCall> build_chunk(const Model& model, const Buffers& b, int n, std::span<const SequenceRows> parts,
                                float* logits, bool all_logits) {
  const ModelConfig& c = model.config();
  const int dim = c.dim, qd = c.q_dim(), kv = c.kv_dim(), ffn = c.ffn_dim;
  std::vector<OpCall> ops;
  // Every op of the chunk, without a regrowth: an OpCall is ~400 bytes and a decode token builds
  // hundreds, on the thread the others wait for. The regrowth copies were nearly all of
  // build_chunk: 1.35% of a 2-thread Q4_0 decode's perf samples before, 0.07% after.
  ops.reserve(size_t(c.n_layers) * (21 + 2 * parts.size()) + 2 * parts.size() + 3);

  OpCall embed;
  embed.kind = OpKind::kGetRows;
  embed.weight = &model.token_embd();
  embed.ids = b.ids;
  embed.out = rows(b.x, n, dim);
  if (c.embedding_scale != 1.0f) embed.scale = c.embedding_scale;
  ops.push_back(embed);

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = model.layers()[size_t(l)];
    const bool local = c.is_local_layer(l);
    // attention block
    ops.push_back(slot_op(b, rmsnorm(L.attn_norm, rows(b.x, n, dim), rows(b.xb, n, dim), c.rms_eps)));
    ops.push_back(slot_matmul(b, L.wq, rows(b.xb, n, dim), b.q, qd));
    ops.push_back(slot_matmul(b, L.wk, rows(b.xb, n, dim), b.k, kv));
    ops.push_back(slot_matmul(b, L.wv, rows(b.xb, n, dim), b.v, kv));
    if (c.qkv_bias) {
      for (auto [bias, buf, width] : {std::tuple{&L.bq, b.q, qd}, std::tuple{&L.bk, b.k, kv}, std::tuple{&L.bv, b.v, kv}}) {
        OpCall add = elementwise(OpKind::kAddBias, rows(buf, n, width), {});
        add.weight = bias;
        ops.push_back(add);
      }
    }
    if (c.qk_norm) {
      // Each head of q and k normalized on its own: the [n x heads*head_dim] rows read as
      // [n*heads x head_dim], normalized in place.
      ops.push_back(rmsnorm(L.q_norm, rows(b.q, n * c.n_heads, c.head_dim), rows(b.q, n * c.n_heads, c.head_dim), c.rms_eps));
      ops.push_back(rmsnorm(L.k_norm, rows(b.k, n * c.n_kv_heads, c.head_dim), rows(b.k, n * c.n_kv_heads, c.head_dim),
                            c.rms_eps));
    }
    for (auto [buf, heads, width] : {std::tuple{b.q, c.n_heads, qd}, std::tuple{b.k, c.n_kv_heads, kv}}) {
      OpCall rope = elementwise(OpKind::kRope, rows(buf, n, width), {});
      rope.n_heads = heads;
      rope.head_dim = c.head_dim;
      rope.cos = local ? b.cos_local : b.cos;
      rope.sin = local ? b.sin_local : b.sin;
      rope.half_split = c.rope_style == RopeStyle::kHalfSplit;
      ops.push_back(rope);
    }
    // Each sequence appends to, and attends over, its own cache.
    for (const SequenceRows& p : parts) {
      // k and v are activation slots: an npu append may pad its rows up inside them.
      OpCall store = elementwise(OpKind::kKvStore, part_rows(b, b.k, p, kv), part_rows(b, b.k, p, kv));
      store.b = part_rows(b, b.v, p, kv);
      set_kv(b, p.seq, l, store);
      store.n_past = p.n_past;
      store.context = b.context;
      ops.push_back(store);
    }
    for (const SequenceRows& p : parts) {
      OpCall att = elementwise(OpKind::kAttention, rows(b.att + int64_t(p.row) * qd, p.n, qd),
                               rows(b.q + int64_t(p.row) * qd, p.n, qd));
      set_kv(b, p.seq, l, att);
      att.n_heads = c.n_heads;
      att.n_kv_heads = c.n_kv_heads;
      att.head_dim = c.head_dim;
      att.n_past = p.n_past;
      att.context = b.context;
      att.scale = c.query_scale;
      att.softcap = c.attn_softcap;
      att.window = c.window_of_layer(l);
      ops.push_back(att);
    }
    ops.push_back(slot_matmul(b, L.wo, rows(b.att, n, qd), b.xb, dim));
    // Post-norms (Gemma) normalize a block's output, in place, before it joins the residual.
    if (c.post_norms) ops.push_back(slot_op(b, rmsnorm(L.attn_post_norm, rows(b.xb, n, dim), rows(b.xb, n, dim), c.rms_eps)));
    ops.push_back(slot_op(b, elementwise(OpKind::kAdd, rows(b.x, n, dim), rows(b.xb, n, dim))));
    // feed-forward block: down(act(gate) * up)
    ops.push_back(slot_op(b, rmsnorm(L.ffn_norm, rows(b.x, n, dim), rows(b.xb, n, dim), c.rms_eps)));
    ops.push_back(slot_matmul(b, L.w_gate, rows(b.xb, n, dim), b.gate, ffn));
    ops.push_back(slot_matmul(b, L.w_up, rows(b.xb, n, dim), b.up, ffn));
    const OpKind glu = c.activation == Activation::kSilu ? OpKind::kSwiglu : OpKind::kGeglu;
    ops.push_back(slot_op(b, elementwise(glu, rows(b.gate, n, ffn), rows(b.up, n, ffn))));
    ops.push_back(slot_matmul(b, L.w_down, rows(b.gate, n, ffn), b.xb, dim));
    if (c.post_norms) ops.push_back(slot_op(b, rmsnorm(L.ffn_post_norm, rows(b.xb, n, dim), rows(b.xb, n, dim), c.rms_eps)));
    ops.push_back(slot_op(b, elementwise(OpKind::kAdd, rows(b.x, n, dim), rows(b.xb, n, dim))));
  }
  if (!logits) return ops;
  int count = 0;  // rows of logits
  if (all_logits) {
    count = n;
    ops.push_back(rmsnorm(model.output_norm(), rows(b.x, n, dim), rows(b.normed, n, dim), c.rms_eps));
  } else {
    // Each asking part's last row, normalized into the next row of `normed`.
    for (const SequenceRows& p : parts) {
      if (!p.logits) continue;
      ops.push_back(rmsnorm(model.output_norm(), rows(b.x + size_t(p.row + p.n - 1) * dim, 1, dim),
                            rows(b.normed + size_t(count) * dim, 1, dim), c.rms_eps));
      ++count;
    }
    if (count == 0) return ops;
  }
  ops.push_back(matmul(model.output(), rows(b.normed, count, dim), logits, c.n_vocab));
  if (c.final_softcap > 0) {
    OpCall cap = elementwise(OpKind::kSoftcap, rows(logits, count, c.n_vocab), {});
    cap.softcap = c.final_softcap;
    ops.push_back(cap);
  }
  return ops;
}

}  // namespace

std::vector<OpCall> build_forward(const Model& model, const Buffers& b, int n, int n_past, float* logits,
                                  bool all_logits) {
  const SequenceRows whole{0, 0, n, n_past, logits != nullptr};
  return build_chunk(model, b, n, std::span(&whole, 1), logits, all_logits);
}

std::vector<OpCall> build_sequences_forward(const Model& model, const Buffers& b, std::span<const SequenceRows> parts,
                                            float* logits) {
  int n = 0;
  for (const SequenceRows& p : parts) n = std::max(n, p.row + p.n);
  return build_chunk(model, b, n, parts, logits, false);
}

}  // namespace tandem::graph
