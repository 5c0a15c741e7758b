#include "runtime/partition.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tandem {

using graph::Act;
using graph::GraphSpec;
using graph::OpCall;
using graph::OpKind;

namespace {

// Activation rows [r0, r1) of a matmul call, with weight rows [w0, w1).
OpCall slice(const OpCall& op, int64_t r0, int64_t r1, int64_t w0, int64_t w1) {
  OpCall c = op;
  c.a = Act{op.a.data + r0 * op.a.ld, r1 - r0, op.a.cols, op.a.ld, op.a.capacity_rows() - r0};
  c.out = Act{op.out.data + r0 * op.out.ld, r1 - r0, op.out.cols, op.out.ld, op.out.capacity_rows() - r0};
  c.row_begin = w0;
  c.row_end = w1;
  return c;
}

std::string range(const char* what, int64_t a, int64_t b) {
  return std::string(what) + " " + std::to_string(a) + ":" + std::to_string(b);
}

}  // namespace

int slot_rows_for(int max_batch, const std::vector<int>& standard_lengths) {
  int rows = 0;
  for (int L : standard_lengths)
    if (L >= max_batch && (rows == 0 || L < rows)) rows = L;
  return std::max(rows, max_batch);
}

Partitioner::Partitioner(PartitionOptions options, PadScratch pad, std::function<bool(const GraphSpec&)> npu_can_run,
                         SupportsFn supports)
    : opt_(std::move(options)), pad_(pad), npu_can_run_(std::move(npu_can_run)), supports_(std::move(supports)) {
  std::sort(opt_.standard_lengths.begin(), opt_.standard_lengths.end());
}

std::string Partitioner::dynamic_device(const OpCall& call, const std::string& label) {
  if (!supports_ || supports_(opt_.gpu, call)) return opt_.gpu;
  for (const std::string& d : opt_.fallbacks) {
    if (d == opt_.gpu || !supports_(d, call)) continue;
    if (placed_elsewhere_++ == 0) first_placement_ = label + " on " + d + " (" + opt_.gpu + " does not support it)";
    return d;
  }
  if (error_.empty()) error_ = "no device of the set runs " + call.describe() + " (" + label + ")";
  return opt_.gpu;
}

bool Partitioner::is_standard(int64_t m) const {
  return m == 1 || std::find(opt_.standard_lengths.begin(), opt_.standard_lengths.end(), m) != opt_.standard_lengths.end();
}

int64_t Partitioner::largest_standard_at_most(int64_t m) const {
  int64_t best = 0;
  for (int L : opt_.standard_lengths)
    if (L <= m) best = L;
  return best;
}

int64_t Partitioner::smallest_standard_at_least(int64_t m) const {
  for (int L : opt_.standard_lengths)
    if (L >= m) return L;
  return 0;
}

int64_t npu_rows_of_split(int64_t weight_rows, double gpu_share) {
  const int64_t npu = int64_t(std::llround(double(weight_rows) * (1.0 - gpu_share) / 32.0)) * 32;
  return std::clamp<int64_t>(npu, 0, weight_rows);
}

bool splits_weight_rows(Strategy s) { return s == Strategy::kWeightCentric || s == Strategy::kHybrid; }

int64_t Partitioner::gpu_rows_of(const OpCall& op, double gpu_share) const {
  return op.weight->rows - npu_rows_of_split(op.weight->rows, gpu_share);
}

std::vector<int> Partitioner::gpu_part(const OpCall& op, int64_t r0, int64_t r1, int64_t w0, int64_t w1,
                                       const std::vector<int>& after, TaskGraph& g, const std::string& label) {
  if (r0 >= r1 || w0 >= w1) return {};
  Task t;
  t.call = slice(op, r0, r1, w0, w1);
  t.device = dynamic_device(*t.call, label);
  t.deps = after;
  t.label = label + " " + t.device + " " + range("rows", r0, r1) + " " + range("w", w0, w1);
  return {g.add(std::move(t))};
}

std::vector<int> Partitioner::npu_part(const OpCall& op, int64_t r0, int64_t r1, int64_t w0, int64_t w1,
                                       const std::vector<int>& after, TaskGraph& g, const std::string& label,
                                       bool exact_shape) {
  if (r0 >= r1 || w0 >= w1) return {};
  const int64_t m = r1 - r0;
  if (exact_shape || is_standard(m)) {
    OpCall c = slice(op, r0, r1, w0, w1);
    if (!npu_can_run_(GraphSpec::of(c))) {
      ++fallbacks_;
      return gpu_part(op, r0, r1, w0, w1, after, g, label + " (npu fallback)");
    }
    Task t;
    t.device = opt_.npu;
    t.fallback_device = opt_.gpu;  // a matmul writes only its output columns: safe to run again
    t.call = c;
    t.deps = after;
    t.label = label + " npu " + range("rows", r0, r1) + " " + range("w", w0, w1);
    return {g.add(std::move(t))};
  }
  // Padded: pieces of at most the largest standard length. A piece runs in place, padded into
  // the rows its buffers hold past the chunk (Act::capacity: nothing is copied, the extra rows
  // compute results nobody reads), or else is staged through the scratch.
  const int64_t largest = opt_.standard_lengths.empty() ? 1 : opt_.standard_lengths.back();
  std::vector<int> deps = after;
  for (int64_t p0 = r0; p0 < r1;) {
    const int64_t piece = std::min(r1 - p0, largest);
    const int64_t L = is_standard(piece) ? piece : smallest_standard_at_least(piece);
    if (L > 0 && p0 + L <= op.a.capacity_rows() && p0 + L <= op.out.capacity_rows()) {
      const OpCall c = slice(op, p0, p0 + L, w0, w1);
      if (!npu_can_run_(GraphSpec::of(c))) {
        ++fallbacks_;
        deps = gpu_part(op, p0, p0 + piece, w0, w1, deps, g, label + " (npu fallback)");
      } else {
        Task t;
        t.device = opt_.npu;
        t.fallback_device = opt_.gpu;
        t.call = c;
        t.deps = deps;
        t.label = label + " npu padded in place " + range("rows", p0, p0 + piece) + "->" + std::to_string(L) + " " +
                  range("w", w0, w1);
        deps = {g.add(std::move(t))};
      }
      p0 += piece;
      continue;
    }
    const int64_t in = op.a.cols, width = op.out.cols;
    OpCall staged = op;
    staged.a = Act{pad_.x, L, in, in};
    staged.out = Act{pad_.y, L, width, width};
    staged.row_begin = w0;
    staged.row_end = w1;
    if (L > pad_.max_rows || in > pad_.max_cols || width > pad_.max_cols || !npu_can_run_(GraphSpec::of(staged))) {
      ++fallbacks_;
      deps = gpu_part(op, p0, p0 + piece, w0, w1, deps, g, label + " (npu fallback)");
      p0 += piece;
      continue;
    }
    const float* src = op.a.data + p0 * op.a.ld;
    const int64_t lda = op.a.ld;
    float* px = pad_.x;
    Task in_copy;
    in_copy.device = "host";
    in_copy.host_bytes = uint64_t(L * in) * sizeof(float);
    in_copy.host_step = [=] {
      for (int64_t i = 0; i < piece; ++i) std::memcpy(px + i * in, src + i * lda, size_t(in) * sizeof(float));
      std::memset(px + piece * in, 0, size_t((L - piece) * in) * sizeof(float));  // the padding rows
    };
    in_copy.deps = deps;
    in_copy.label = label + " pad " + std::to_string(piece) + "->" + std::to_string(L) + " in";
    const int copy_in = g.add(std::move(in_copy));
    Task run;
    run.device = opt_.npu;
    run.fallback_device = opt_.gpu;
    run.call = staged;
    run.deps = {copy_in};
    run.label = label + " npu padded " + range("rows", p0, p0 + piece) + " " + range("w", w0, w1);
    const int npu = g.add(std::move(run));
    float* dst = op.out.data + p0 * op.out.ld;
    const int64_t ldo = op.out.ld;
    const float* py = pad_.y;
    Task out_copy;
    out_copy.device = "host";
    out_copy.host_bytes = uint64_t(piece * (w1 - w0)) * sizeof(float);
    out_copy.host_step = [=] {
      for (int64_t i = 0; i < piece; ++i)
        std::memcpy(dst + i * ldo + w0, py + i * width + w0, size_t(w1 - w0) * sizeof(float));
    };
    out_copy.deps = {npu};
    out_copy.label = label + " pad out";
    deps = {g.add(std::move(out_copy))};
    p0 += piece;
  }
  return deps;
}

std::vector<int> Partitioner::npu_pipe(const OpCall& op, const std::vector<int>& after, TaskGraph& g,
                                       const std::string& label) {
  // Standard-size sub-graphs back to back on the NPU alone; the last remainder is padded.
  const int64_t n = op.out.rows, R = op.weight->rows;
  std::vector<int> deps = after;
  for (int64_t r0 = 0; r0 < n;) {
    int64_t piece = largest_standard_at_most(n - r0);
    if (piece == 0) piece = n - r0;  // shorter than every standard length: padded
    deps = npu_part(op, r0, r0 + piece, 0, R, deps, g, label, false);
    r0 += piece;
  }
  return deps;
}

OpChoice Partitioner::choice_for(const OpCall& matmul, bool count) {
  if (opt_.decider) {
    if (std::optional<OpChoice> c = opt_.decider(matmul.weight->rows, matmul.weight->cols, matmul.out.rows)) {
      if (count) ++decided_;
      return *c;
    }
  }
  return OpChoice{opt_.strategy, opt_.gpu_share};
}

bool Partitioner::npu_runs_whole(const OpCall& matmul) {
  switch (choice_for(matmul, false).strategy) {
    case Strategy::kNpuOnly:
    case Strategy::kPadding:
    case Strategy::kOnlinePrepare:
    case Strategy::kNpuPipe: return true;
    case Strategy::kLayer: return matmul.out.rows > 1;  // prefill NPU-dominant, decode on the GPU
    default: return false;
  }
}

namespace {

// Rows [p0, p0 + L) of an op whose rows are independent (a row op, or a fused norm and its
// projections), its buffers' capacity carried along.
OpCall rows_of(const OpCall& op, int64_t p0, int64_t L) {
  auto sub = [&](const Act& a) { return Act{a.data + p0 * a.ld, L, a.cols, a.ld, a.capacity_rows() - p0}; };
  OpCall c = op;
  c.a = sub(op.a);
  c.out = sub(op.out);
  for (int i = 0; i < op.n_proj && i < OpCall::kMaxProjections; ++i) c.proj[size_t(i)].out = sub(op.proj[size_t(i)].out);
  if (op.kind == OpKind::kKvStore) {  // the values beside the keys; the piece appends at its own position
    c.b = sub(op.b);
    c.n_past = op.n_past + int(p0);
  }
  return c;
}

}  // namespace

std::optional<std::vector<int>> Partitioner::npu_pieces(const OpCall& op, const std::string& fallback,
                                                        const std::vector<int>& after, TaskGraph& g,
                                                        const std::string& label) {
  // Pieces of at most the largest standard length, each at a static shape: a piece shorter than
  // every standard length above it is padded in place (its buffers hold the rows; the rows are
  // independent, so the padding rows compute results nobody reads). Nothing when a piece cannot be
  // placed so: the op then stays off the NPU.
  const int64_t n = op.out.rows;
  const int64_t largest = opt_.standard_lengths.empty() ? 1 : opt_.standard_lengths.back();
  std::vector<OpCall> pieces;
  std::vector<int64_t> valid;
  for (int64_t p0 = 0; p0 < n;) {
    const int64_t piece = std::min(n - p0, largest);
    const int64_t L = is_standard(piece) ? piece : smallest_standard_at_least(piece);
    bool room = L > 0 && p0 + L <= op.out.capacity_rows() && p0 + L <= op.a.capacity_rows();
    for (int i = 0; i < op.n_proj && room; ++i) room = p0 + L <= op.proj[size_t(i)].out.capacity_rows();
    // A KV append's padding rows land in positions past the chunk (the next append overwrites
    // them before any attention reads them), so they must exist in the cache.
    if (op.kind == OpKind::kKvStore) room = room && p0 + L <= op.b.capacity_rows() && op.n_past + p0 + L <= op.context;
    if (!room) return std::nullopt;
    pieces.push_back(rows_of(op, p0, L));
    valid.push_back(piece);
    p0 += piece;
  }
  for (const OpCall& c : pieces)
    if (!npu_can_run_(GraphSpec::of(c))) return std::nullopt;
  std::vector<int> deps = after;
  int64_t r0 = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    Task t;
    t.device = opt_.npu;
    t.fallback_device = fallback;
    t.call = pieces[i];
    t.deps = deps;
    const int64_t L = pieces[i].out.rows;
    t.label = label + " npu " + range("rows", r0, r0 + valid[i]) + (L == valid[i] ? "" : " padded in place ->" + std::to_string(L));
    deps = {g.add(std::move(t))};
    r0 += valid[i];
  }
  return deps;
}

std::optional<std::vector<int>> Partitioner::npu_row_op(const OpCall& op, const std::vector<int>& after, TaskGraph& g,
                                                        const std::string& label) {
  // An rmsnorm writes a buffer it does not read: the GPU can run it again. Add and SwiGLU update
  // their output in place, so a failed run may have left it half written: no second run.
  const std::string fallback = op.kind == OpKind::kRmsNorm && op.out.data != op.a.data ? opt_.gpu : "";
  std::optional<std::vector<int>> done = npu_pieces(op, fallback, after, g, label + " (row op beside the npu's matmuls)");
  if (done) ++npu_row_ops_;
  return done;
}

std::optional<std::vector<int>> Partitioner::npu_kv_store(const OpCall& op, const std::vector<int>& after, TaskGraph& g,
                                                          const std::string& label) {
  // The append writes the same bytes again when rerun: the GPU's role (which reads the pages for
  // attention) takes a failed piece.
  const std::string fallback = supports_ && supports_(opt_.gpu, op) ? opt_.gpu : "";
  std::optional<std::vector<int>> done = npu_pieces(op, fallback, after, g, label + " (into the KV pages the npu owns)");
  if (done) ++npu_kv_appends_;
  return done;
}

std::optional<std::vector<int>> Partitioner::npu_fused_norm(const OpCall& norm, const std::vector<const OpCall*>& projections,
                                                            const std::vector<int>& after, TaskGraph& g,
                                                            const std::string& label) {
  if (!opt_.npu_row_ops || opt_.npu.empty() || projections.empty() || projections.size() > size_t(OpCall::kMaxProjections) ||
      norm.out.data == norm.a.data)
    return std::nullopt;
  for (const OpCall* p : projections)
    if (p->kind != OpKind::kMatmul || p->a.data != norm.out.data || p->out.rows != norm.out.rows || p->row_begin != 0 ||
        p->row_end != p->weight->rows || !npu_runs_whole(*p))
      return std::nullopt;
  OpCall fused = norm;
  fused.kind = OpKind::kNormLinear;
  fused.n_proj = int(projections.size());
  std::string names;
  for (size_t i = 0; i < projections.size(); ++i) {
    fused.proj[i] = {projections[i]->weight, projections[i]->out};
    names += (i ? "," : "") + projections[i]->weight->name;
  }
  // The fused op reads x and writes only the projections: the cpu can run it again unfused.
  const std::string fallback = supports_ && supports_(opt_.gpu, fused) ? opt_.gpu : "";
  std::optional<std::vector<int>> done = npu_pieces(fused, fallback, after, g, label + " fused with " + names);
  if (!done) return std::nullopt;
  for (const OpCall* p : projections) choice_for(*p, true);  // the plan decided them: counted as a split would be
  ++npu_fused_;
  return done;
}

std::vector<int> Partitioner::lower_forward(const std::vector<OpCall>& ops, const std::function<bool(const OpCall&)>& layer_matmul,
                                            TaskGraph& g) {
  // Each op's next layer matmul (a row op's placement may follow it), found walking backwards.
  std::vector<const OpCall*> consumer(ops.size(), nullptr);
  for (size_t i = ops.size(); i-- > 1;) consumer[i - 1] = layer_matmul(ops[i]) ? &ops[i] : consumer[i];
  std::vector<int> after;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpCall& op = ops[i];
    const std::string label = "op" + std::to_string(i) + " " + op.describe();
    if (op.kind == OpKind::kRmsNorm && opt_.npu_row_ops) {
      // The layer matmuls right after it that read what it writes: a fusion cluster.
      std::vector<const OpCall*> cluster;
      for (size_t j = i + 1; j < ops.size() && cluster.size() < size_t(OpCall::kMaxProjections) && layer_matmul(ops[j]) &&
                             ops[j].a.data == op.out.data;
           ++j)
        cluster.push_back(&ops[j]);
      if (!cluster.empty()) {
        if (std::optional<std::vector<int>> done = npu_fused_norm(op, cluster, after, g, label)) {
          after = *done;
          i += cluster.size();
          continue;
        }
      }
    }
    after = lower(op, layer_matmul(op), after, g, label, consumer[i]);
  }
  return after;
}

std::vector<int> Partitioner::lower(const OpCall& op, bool splittable, const std::vector<int>& after, TaskGraph& g,
                                    const std::string& label, const OpCall* consumer) {
  if (op.kind == OpKind::kKvStore && op.paged_kv() && opt_.npu_owns_kv && !opt_.npu.empty()) {
    if (std::optional<std::vector<int>> done = npu_kv_store(op, after, g, label)) return *done;
  }
  const bool row_op = op.kind == OpKind::kRmsNorm || op.kind == OpKind::kSwiglu || op.kind == OpKind::kAdd;
  if (opt_.npu_row_ops && row_op && !opt_.npu.empty() && consumer && consumer->kind == OpKind::kMatmul &&
      consumer->out.rows == op.out.rows && npu_runs_whole(*consumer)) {
    if (std::optional<std::vector<int>> done = npu_row_op(op, after, g, label)) return *done;
  }
  if (!splittable || op.kind != OpKind::kMatmul || opt_.npu.empty()) {
    // Everything else (norms, rope, attention, SwiGLU, the vocabulary projection) runs whole on
    // the GPU, as HeteroInfer places them; so does every matmul when the set has no NPU.
    Task t;
    t.call = op;
    t.device = dynamic_device(op, label);
    t.deps = after;
    t.label = label + " " + t.device;
    return {g.add(std::move(t))};
  }
  return lower_split(op, choice_for(op, true), after, g, label);
}

std::vector<int> Partitioner::lower_split(const OpCall& op, const OpChoice& choice, const std::vector<int>& after,
                                          TaskGraph& g, const std::string& label) {
  const Strategy strategy = choice.strategy;
  const double share = choice.gpu_share;
  const int64_t n = op.out.rows, R = op.weight->rows;
  auto join = [](std::vector<int> a, const std::vector<int>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  switch (strategy) {
    case Strategy::kGpuOnly: return gpu_part(op, 0, n, 0, R, after, g, label);
    case Strategy::kNpuOnly:
    case Strategy::kPadding: return npu_part(op, 0, n, 0, R, after, g, label, false);
    case Strategy::kOnlinePrepare: return npu_part(op, 0, n, 0, R, after, g, label, true);
    case Strategy::kNpuPipe: return npu_pipe(op, after, g, label);
    case Strategy::kLayer:
      // Prefill is NPU-dominant (matmuls on the NPU), decode GPU-dominant.
      return n > 1 ? npu_part(op, 0, n, 0, R, after, g, label, false) : gpu_part(op, 0, n, 0, R, after, g, label);
    case Strategy::kWeightCentric: {
      const int64_t split = gpu_rows_of(op, share);
      return join(gpu_part(op, 0, n, 0, split, after, g, label), npu_part(op, 0, n, split, R, after, g, label, false));
    }
    case Strategy::kActivationCentric: {
      const int64_t L = is_standard(n) ? n : largest_standard_at_most(n);
      return join(npu_part(op, 0, L, 0, R, after, g, label, false), gpu_part(op, L, n, 0, R, after, g, label));
    }
    case Strategy::kMultiTensor: {
      // Several standard chunks back to back on the NPU, one remainder on the GPU alongside: the
      // solver's chunk length and count where it gave them (and they fit), else the largest
      // standard length, as many times as it fits.
      const bool chosen = choice.npu_chunk > 0 && choice.npu_chunks > 0 && is_standard(choice.npu_chunk) &&
                          choice.npu_chunk * choice.npu_chunks <= n;
      const int64_t L = chosen ? choice.npu_chunk : is_standard(n) ? n : largest_standard_at_most(n);
      if (L == 0) return gpu_part(op, 0, n, 0, R, after, g, label);
      const int64_t chunks = chosen ? choice.npu_chunks : n / L;
      std::vector<int> npu_deps = after;
      for (int64_t c = 0; c < chunks; ++c) npu_deps = npu_part(op, c * L, (c + 1) * L, 0, R, npu_deps, g, label, false);
      return join(npu_deps, gpu_part(op, chunks * L, n, 0, R, after, g, label));
    }
    case Strategy::kHybrid: {
      // The standard part split by weight rows (the NPU gets a friendly sub-shape, the GPU
      // balances it); the dynamic remainder padded onto the NPU for the same weight rows.
      const int64_t L = is_standard(n) ? n : largest_standard_at_most(n);
      const int64_t split = gpu_rows_of(op, share);
      std::vector<int> done = gpu_part(op, 0, n, 0, split, after, g, label);
      done = join(done, npu_part(op, 0, L, split, R, after, g, label, false));
      return join(done, npu_part(op, L, n, split, R, after, g, label, false));
    }
  }
  return gpu_part(op, 0, n, 0, R, after, g, label);
}

}  // namespace tandem
