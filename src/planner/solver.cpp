#include "planner/solver.h"

#include <algorithm>
#include <cstdio>

namespace tandem::planner {

namespace {

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", s * 1e3);
  return b;
}

}  // namespace

std::string Decision::explain() const {
  std::string s = std::string(strategy_name(best.strategy));
  if (best.strategy == Strategy::kWeightCentric || best.strategy == Strategy::kHybrid) {
    char b[32];
    std::snprintf(b, sizeof b, " (gpu %.2f)", best.gpu_share);
    s += b;
  } else if (best.strategy == Strategy::kMultiTensor) {
    s += " (" + std::to_string(best.npu_chunks) + " x " + std::to_string(best.npu_chunk) + " rows on the npu)";
  }
  s += ": " + ms(best.seconds);
  for (size_t i = 1; i < alternatives.size() && i < 5; ++i) {
    s += std::string(" < ") + strategy_name(alternatives[i].strategy) + " " + ms(alternatives[i].seconds);
  }
  return s;
}

Result<Decision> decide(const PerfModels& perf, const CostDb& db, int64_t out, int64_t in, int64_t n, SyncMode sync) {
  if (out < 1 || in < 1 || n < 1) return InvalidArgument("solver: shape " + std::to_string(out) + "x" + std::to_string(in) + " at n=" + std::to_string(n));
  Decision d;
  d.out = out;
  d.in = in;
  d.n = n;
  const double t_sync = sync == SyncMode::kFast ? db.sync_fast_s : db.sync_blocking_s;
  std::vector<int64_t> lengths(db.standard_lengths.begin(), db.standard_lengths.end());
  std::sort(lengths.begin(), lengths.end());
  const bool standard = n == 1 || std::binary_search(lengths.begin(), lengths.end(), n);
  int64_t L = 0;  // the largest standard length <= n
  for (int64_t l : lengths)
    if (l <= n) L = l;
  auto add = [&](Strategy s, double share, double t, std::string detail) {
    d.alternatives.push_back(Alternative{s, share, t, 0, 0, std::move(detail)});
  };

  if (auto g = perf.gpu(out, in, n)) add(Strategy::kGpuOnly, 1.0, *g, "gpu " + ms(*g));
  if (auto np = perf.npu(out, in, n)) {
    const int64_t graph = *perf.npu_graph_length(out, in, n);
    const std::string detail = "npu " + std::to_string(n) + " rows in the " + std::to_string(graph) + "-row graph " + ms(*np) +
                               " + sync " + ms(t_sync);
    add(standard ? Strategy::kNpuOnly : Strategy::kPadding, 0.0, *np + t_sync, detail);
  }
  if (!standard) {
    if (auto ex = perf.npu_exact(out, in, n)) {
      const double build = db.prepare_fixed_s + db.prepare_per_byte_s * double(n * (in + out) * 2);
      add(Strategy::kOnlinePrepare, 0.0, *ex + build + t_sync,
          "npu exact " + ms(*ex) + " + graph build " + ms(build) + " + sync " + ms(t_sync));
    }
    // npu-pipe: standard pieces back to back, the remainder padded.
    double pipe = 0;
    bool ok = true;
    for (int64_t left = n; left > 0 && ok;) {
      int64_t piece = 0;
      for (int64_t l : lengths)
        if (l <= left) piece = l;
      if (piece == 0) piece = left;
      auto t = perf.npu(out, in, piece);
      ok = t.has_value();
      pipe += t.value_or(0);
      left -= piece;
    }
    if (ok) add(Strategy::kNpuPipe, 0.0, pipe + t_sync, "npu pieces " + ms(pipe) + " + sync " + ms(t_sync));
  }
  if (L > 0 && L < n) {
    const auto npu_l = perf.npu(out, in, L);
    if (auto g = perf.gpu(out, in, n - L); npu_l && g) {
      add(Strategy::kActivationCentric, double(n - L) / double(n), std::max(*npu_l, *g) + t_sync,
          "npu " + std::to_string(L) + " rows " + ms(*npu_l) + " | gpu " + std::to_string(n - L) + " rows " + ms(*g) +
              " + sync " + ms(t_sync));
    }
  }
  for (int64_t rows : perf.split_rows(out, in)) {
    const double share = double(out - rows) / double(out);
    const auto g = perf.gpu(out - rows, in, n, out);
    if (!g) continue;
    if (auto np = perf.npu(rows, in, n, out)) {
      add(Strategy::kWeightCentric, share, std::max(*g, *np) + t_sync,
          "gpu " + std::to_string(out - rows) + " weight rows " + ms(*g) + " | npu " + std::to_string(rows) + " " + ms(*np) +
              " + sync " + ms(t_sync));
    }
    if (!standard && L > 0) {
      const auto a = perf.npu(rows, in, L, out), b = perf.npu(rows, in, n - L, out);
      if (a && b) {
        add(Strategy::kHybrid, share, std::max(*g, *a + *b) + t_sync,
            "gpu " + std::to_string(out - rows) + " weight rows " + ms(*g) + " | npu " + std::to_string(rows) + " rows: " +
                std::to_string(L) + " " + ms(*a) + " + " + std::to_string(n - L) + " padded " + ms(*b) + " + sync " + ms(t_sync));
      }
    }
  }
  // multi-tensor: k chunks of any standard length l back to back on the NPU (k >= 2; one chunk is
  // activation-centric), the rest on the GPU alongside. Listed last: on a tie a simpler strategy wins. With lengths that double, only chunks
  // shorter than the largest standard length that fits can repeat.
  for (int64_t l : lengths) {
    if (l >= n) break;
    if (l == 1) continue;  // one-row chunks are decode graphs run n times: never a prefill plan
    const auto npu_l = perf.npu(out, in, l);
    if (!npu_l) continue;
    for (int64_t k = 2; k * l <= n; ++k) {
      const double t_npu = double(k) * *npu_l;
      const int64_t rest = n - k * l;
      const double t_gpu = rest > 0 ? perf.gpu(out, in, rest).value_or(1e30) : 0.0;
      if (t_gpu >= 1e30) continue;
      add(Strategy::kMultiTensor, double(rest) / double(n), std::max(t_npu, t_gpu) + t_sync,
          std::to_string(k) + " x npu " + std::to_string(l) + " rows " + ms(t_npu) + " | gpu " + std::to_string(rest) +
              " rows " + ms(t_gpu) + " + sync " + ms(t_sync));
      d.alternatives.back().npu_chunk = l;
      d.alternatives.back().npu_chunks = k;
    }
  }
  if (d.alternatives.empty()) {
    return NotFound("solver: no profiled strategy for weight " + std::to_string(out) + "x" + std::to_string(in) + " at n=" +
                    std::to_string(n) + " (profile this shape first)");
  }
  // Fastest first; on a tie the simpler strategy (listed first) stays first.
  std::stable_sort(d.alternatives.begin(), d.alternatives.end(),
                   [](const Alternative& a, const Alternative& b) { return a.seconds < b.seconds; });
  // Keep one entry per strategy (its best ratio or chunk count) for the explanation.
  std::vector<Alternative> unique;
  for (const Alternative& a : d.alternatives)
    if (std::none_of(unique.begin(), unique.end(), [&](const Alternative& u) { return u.strategy == a.strategy; })) unique.push_back(a);
  d.alternatives = std::move(unique);
  d.best = d.alternatives.front();
  return d;
}

}  // namespace tandem::planner
