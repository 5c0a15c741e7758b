#include "graph/op.h"

#include <cmath>
#include <cstdio>

namespace tandem::graph {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kGetRows: return "get_rows";
    case OpKind::kRmsNorm: return "rmsnorm";
    case OpKind::kMatmul: return "matmul";
    case OpKind::kAddBias: return "add_bias";
    case OpKind::kRope: return "rope";
    case OpKind::kKvStore: return "kv_store";
    case OpKind::kAttention: return "attention";
    case OpKind::kSwiglu: return "swiglu";
    case OpKind::kAdd: return "add";
    case OpKind::kGeglu: return "geglu";
    case OpKind::kSoftcap: return "softcap";
    case OpKind::kNormLinear: return "norm_linear";
  }
  return "?";
}

OpCall OpCall::matmul(const Weight* w, int64_t row_begin, int64_t row_end, const float* x, int64_t m,
                      int64_t ldx, float* y, int64_t ldy) {
  OpCall c;
  c.kind = OpKind::kMatmul;
  c.weight = w;
  c.row_begin = row_begin;
  c.row_end = row_end;
  c.a = Act{const_cast<float*>(x), m, w ? w->cols : 0, ldx};
  c.out = Act{y, m, w ? w->rows : 0, ldy};
  return c;
}

std::string OpCall::describe() const {
  std::string s = op_kind_name(kind);
  if (weight) s += " '" + weight->name + "'";
  if (kind == OpKind::kMatmul) s += " rows [" + std::to_string(row_begin) + ", " + std::to_string(row_end) + ")";
  for (int i = 0; i < n_proj && i < kMaxProjections; ++i) s += std::string(i ? ", " : " -> ") + "'" + (proj[size_t(i)].weight ? proj[size_t(i)].weight->name : "?") + "'";
  return s + " x " + std::to_string(out.rows);
}

float OpCall::attention_scale() const { return scale != 0 ? scale : 1.0f / std::sqrt(float(head_dim)); }

GraphSpec GraphSpec::of(const OpCall& c) {
  GraphSpec s{c.kind, c.weight, c.row_begin, c.row_end, c.out.rows, c.out.cols,
              c.kind == OpKind::kRmsNorm || c.kind == OpKind::kNormLinear ? c.eps : 0.0f, {}, 0};
  if (c.kind == OpKind::kNormLinear) {
    s.n_proj = std::clamp(c.n_proj, 0, OpCall::kMaxProjections);
    for (int i = 0; i < s.n_proj; ++i) s.proj[size_t(i)] = c.proj[size_t(i)].weight;
  }
  if (c.kind == OpKind::kKvStore) s.kv = c.kv_pages;
  return s;
}

std::string GraphSpec::key() const {
  std::string k = std::string(op_kind_name(kind)) + ":" + (weight ? weight->name : std::string("-"));
  if (kind == OpKind::kMatmul) k += "[" + std::to_string(row_begin) + ":" + std::to_string(row_end) + "]";
  for (int i = 0; i < n_proj; ++i) k += std::string(i ? "," : "->") + (proj[size_t(i)] ? proj[size_t(i)]->name : "-");
  k += "x" + std::to_string(m) + "x" + std::to_string(cols);
  if (kind == OpKind::kRmsNorm || kind == OpKind::kNormLinear) {
    char e[32];
    std::snprintf(e, sizeof e, "@eps%.9g", double(eps));
    k += e;
  }
  if (kind == OpKind::kKvStore)
    k += "@kv:" + (kv.capacity ? std::string(kv_layout_name(kv.layout)) + ":" + std::to_string(kv.capacity) + "x" +
                                     std::to_string(kv.heads) + "x" + std::to_string(kv.head_dim) + ":" +
                                     std::string(dtype_name(kv.type)) + "," + std::string(dtype_name(kv.v_type))
                               : std::string("host"));
  return k;
}

namespace {

Status need(bool ok, const OpCall& c, const std::string& what) {
  return ok ? Status::Ok() : InvalidArgument(c.describe() + ": " + what);
}

// The caches a kv_store or attention reads: the host layout's, or pages of the call's own width
// and context (and, for attention, of its heads).
Status check_kv(const OpCall& c, int64_t kv_dim) {
  if (!c.paged_kv()) return need(c.k_cache && c.v_cache, c, "needs k_cache and v_cache");
  const KvGeometry& g = c.kv_pages;
  TANDEM_RETURN_IF_ERROR(need(c.k_pages && c.v_pages, c, "needs k_pages and v_pages"));
  TANDEM_RETURN_IF_ERROR(check_kv_type(g.type, g.head_dim, c.describe() + ": keys"));
  TANDEM_RETURN_IF_ERROR(check_kv_type(g.v_type, g.head_dim, c.describe() + ": values"));
  TANDEM_RETURN_IF_ERROR(need(int64_t(g.width()) == kv_dim && int64_t(g.capacity) == c.context, c,
                              "KV pages of " + std::to_string(g.capacity) + " x " + std::to_string(g.width()) +
                                  " do not match context " + std::to_string(c.context) + " x kv width " + std::to_string(kv_dim)));
  if (c.kind == OpKind::kAttention)
    return need(int64_t(g.heads) == c.n_kv_heads && int64_t(g.head_dim) == c.head_dim, c,
                "KV pages of " + std::to_string(g.heads) + " heads x " + std::to_string(g.head_dim) + " do not match the attention's");
  return Status::Ok();
}

Status check_act(const OpCall& c, const Act& a, const char* name, int64_t rows, int64_t cols) {
  if (!a.data) return InvalidArgument(c.describe() + ": " + name + " is null");
  if (a.rows != rows || a.cols != cols || a.ld < a.cols) {
    return InvalidArgument(c.describe() + ": " + name + " is [" + std::to_string(a.rows) + " x " +
                           std::to_string(a.cols) + ", ld " + std::to_string(a.ld) + "], expected [" +
                           std::to_string(rows) + " x " + std::to_string(cols) + "]");
  }
  return Status::Ok();
}

}  // namespace

Status validate_call(const OpCall& c) {
  const int64_t n = c.out.rows;
  if (n <= 0) return InvalidArgument(c.describe() + ": no rows");
  switch (c.kind) {
    case OpKind::kMatmul: {
      TANDEM_RETURN_IF_ERROR(need(c.weight && c.weight->present() && c.weight->rows > 1, c, "needs a 2-D weight"));
      TANDEM_RETURN_IF_ERROR(need(c.row_begin >= 0 && c.row_begin < c.row_end && c.row_end <= c.weight->rows, c,
                                  "row range outside the weight's " + std::to_string(c.weight->rows) + " rows"));
      TANDEM_RETURN_IF_ERROR(check_act(c, c.a, "x", n, c.weight->cols));
      return check_act(c, c.out, "y", n, c.weight->rows);
    }
    case OpKind::kGetRows:
      TANDEM_RETURN_IF_ERROR(need(c.weight && c.weight->present() && c.ids, c, "needs an embedding and ids"));
      for (int64_t i = 0; i < n; ++i)
        TANDEM_RETURN_IF_ERROR(need(c.ids[i] >= 0 && c.ids[i] < c.weight->rows, c, "id " + std::to_string(c.ids[i]) + " outside the table"));
      return check_act(c, c.out, "out", n, c.weight->cols);
    case OpKind::kRmsNorm:
      TANDEM_RETURN_IF_ERROR(need(c.weight && c.weight->cols == c.a.cols && c.eps > 0, c, "needs a gain of the row width and eps > 0"));
      TANDEM_RETURN_IF_ERROR(check_act(c, c.a, "x", n, c.weight->cols));
      return check_act(c, c.out, "out", n, c.weight->cols);
    case OpKind::kAddBias:
      TANDEM_RETURN_IF_ERROR(need(c.weight && c.weight->cols == c.out.cols, c, "bias width differs from the rows"));
      return check_act(c, c.out, "out", n, c.out.cols);
    case OpKind::kRope:
      TANDEM_RETURN_IF_ERROR(need(c.cos && c.sin && c.head_dim > 0 && c.head_dim % 2 == 0 &&
                                      int64_t(c.n_heads) * c.head_dim == c.out.cols, c, "heads x head_dim must equal the row width"));
      return check_act(c, c.out, "out", n, c.out.cols);
    case OpKind::kKvStore:
      TANDEM_RETURN_IF_ERROR(check_kv(c, int64_t(c.a.cols)));
      TANDEM_RETURN_IF_ERROR(need(c.n_past >= 0 && c.n_past + n <= c.context, c,
                                  "positions " + std::to_string(c.n_past) + "+" + std::to_string(n) + " exceed the cache"));
      TANDEM_RETURN_IF_ERROR(check_act(c, c.a, "k", n, c.a.cols));
      return check_act(c, c.b, "v", n, c.a.cols);
    case OpKind::kAttention:
      TANDEM_RETURN_IF_ERROR(need(c.n_heads > 0 && c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads == 0 &&
                                      c.n_past >= 0 && c.n_past + n <= c.context, c, "bad head counts or positions"));
      TANDEM_RETURN_IF_ERROR(check_kv(c, int64_t(c.n_kv_heads) * c.head_dim));
      TANDEM_RETURN_IF_ERROR(need(c.window >= 0 && c.softcap >= 0 && std::isfinite(c.scale) && c.scale >= 0, c,
                                  "window, softcap and scale must be >= 0"));
      TANDEM_RETURN_IF_ERROR(check_act(c, c.a, "q", n, int64_t(c.n_heads) * c.head_dim));
      return check_act(c, c.out, "out", n, int64_t(c.n_heads) * c.head_dim);
    case OpKind::kSoftcap:
      TANDEM_RETURN_IF_ERROR(need(c.softcap > 0 && std::isfinite(c.softcap), c, "softcap must be > 0"));
      return check_act(c, c.out, "out", n, c.out.cols);
    case OpKind::kSwiglu:
    case OpKind::kGeglu:
    case OpKind::kAdd:
      TANDEM_RETURN_IF_ERROR(check_act(c, c.a, "a", n, c.out.cols));
      return check_act(c, c.out, "out", n, c.out.cols);
    case OpKind::kNormLinear: {
      TANDEM_RETURN_IF_ERROR(need(c.weight && c.weight->cols == c.a.cols && c.eps > 0, c, "needs a gain of the row width and eps > 0"));
      TANDEM_RETURN_IF_ERROR(need(c.n_proj >= 1 && c.n_proj <= OpCall::kMaxProjections, c,
                                  std::to_string(c.n_proj) + " projections (1.." + std::to_string(OpCall::kMaxProjections) + ")"));
      TANDEM_RETURN_IF_ERROR(check_act(c, c.a, "x", n, c.weight->cols));
      TANDEM_RETURN_IF_ERROR(check_act(c, c.out, "out", n, c.weight->cols));
      for (int i = 0; i < c.n_proj; ++i) {
        const OpCall::Projection& p = c.proj[size_t(i)];
        TANDEM_RETURN_IF_ERROR(need(p.weight && p.weight->present() && p.weight->rows > 1 && p.weight->cols == c.a.cols, c,
                                    "projection " + std::to_string(i) + " needs a 2-D weight of the row width"));
        TANDEM_RETURN_IF_ERROR(check_act(c, p.out, "y", n, p.weight->rows));
      }
      return Status::Ok();
    }
  }
  return InvalidArgument(c.describe() + ": unknown op");
}

}  // namespace tandem::graph
