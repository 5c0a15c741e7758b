#include "sim/soc_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "core/sourced_json.h"

namespace tandem::sim {

using nlohmann::json;

double ProfilePoint::weight_bytes() const { return double(out) * double(in) * 18.0 / 32.0; }
double ProfilePoint::activation_bytes() const { return double(n) * double(in + out) * 2.0; }

namespace {

// Least squares on relative error over the coefficients in `use` (fixed, s/byte, s/flop); the
// others stay 0. Columns are scaled to O(1) (us, MB, GFLOP) for a well-conditioned solve.
// Returns false if the normal equations are singular; *sse gets the sum of squared errors.
bool solve_subset(const std::vector<ProfilePoint>& points, const std::array<bool, 3>& use, std::array<double, 3>* coef, double* sse) {
  std::vector<int> cols;
  for (int i = 0; i < 3; ++i)
    if (use[size_t(i)]) cols.push_back(i);
  const size_t k = cols.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));  // [A^T A | A^T b]
  auto row_of = [](const ProfilePoint& p) {
    const double t = p.gpu_s * 1e6;
    return std::array<double, 3>{1.0 / t, (p.weight_bytes() + p.activation_bytes()) / 1e6 / t, p.flops() / 1e9 / t};
  };
  for (const ProfilePoint& p : points) {
    const auto row = row_of(p);
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < k; ++j) m[i][j] += row[size_t(cols[i])] * row[size_t(cols[j])];
      m[i][k] += row[size_t(cols[i])];
    }
  }
  for (size_t c = 0; c < k; ++c) {  // Gauss-Jordan with partial pivoting
    size_t piv = c;
    for (size_t r = c + 1; r < k; ++r)
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    std::swap(m[c], m[piv]);
    if (std::abs(m[c][c]) < 1e-300) return false;
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (size_t q = c; q <= k; ++q) m[r][q] -= f * m[c][q];
    }
  }
  *coef = {0, 0, 0};
  for (size_t i = 0; i < k; ++i) (*coef)[size_t(cols[i])] = m[i][k] / m[i][i];
  *sse = 0;
  for (const ProfilePoint& p : points) {
    const auto row = row_of(p);
    double pred = 0;
    for (int i = 0; i < 3; ++i) pred += row[size_t(i)] * (*coef)[size_t(i)];
    *sse += (pred - 1.0) * (pred - 1.0);
  }
  return true;
}

}  // namespace

Result<GpuLatencyModel> fit_gpu_latency(const std::vector<ProfilePoint>& points) {
  if (points.size() < 3) {
    return InvalidArgument("gpu latency fit: needs at least 3 profile points, got " + std::to_string(points.size()));
  }
  for (const ProfilePoint& p : points)
    if (!(p.gpu_s > 0)) return InvalidArgument("gpu latency fit: a profile point has no GPU time");
  // Minimize sum ((model(p) - t_p) / t_p)^2: every point counts by its relative error, so the short
  // decode kernels weigh as much as the long prefill ones. Latency cannot have a negative term, so
  // this is non-negative least squares: the best fit over the subsets of terms whose coefficients
  // all come out positive (the full model first; a machine whose points show no fixed cost, say,
  // gets none). Bytes or FLOPs must be in it.
  double best_sse = INFINITY;
  std::array<double, 3> best{};
  for (int mask = 7; mask >= 2; --mask) {
    const std::array<bool, 3> use = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    if (!use[1] && !use[2]) continue;
    std::array<double, 3> coef{};
    double sse = 0;
    if (!solve_subset(points, use, &coef, &sse)) continue;
    bool positive = true;
    for (int i = 0; i < 3; ++i)
      if (use[size_t(i)] && !(coef[size_t(i)] > 0)) positive = false;
    if (positive && sse < best_sse * (1 - 1e-12)) {
      best_sse = sse;
      best = coef;
    }
  }
  if (!std::isfinite(best_sse)) {
    return InvalidArgument("gpu latency fit: the profile points give no model with positive byte or FLOP cost");
  }
  GpuLatencyModel g;
  g.fixed_s = best[0] * 1e-6;
  g.s_per_byte = best[1] * 1e-6 / 1e6;
  g.s_per_flop = best[2] * 1e-6 / 1e9;
  return g;
}

namespace {

Result<SocModel> parse(const json& root, const std::string& file, const std::string& npu_dir) {
  if (!root.is_object()) return InvalidArgument(file + ": top level must be a JSON object");
  SourcedJsonReader r(root, file);
  SocModel s;
  s.file = file;
  s.npu_dir = npu_dir;
  s.name = r.string("name");
  s.description = r.string("description");
  const std::string target = r.string("npu_target");
  auto& g = s.gpu;
  g.peak_flops = r.number("gpu.peak_flops");
  g.achieved_flops = r.number("gpu.achieved_flops");
  g.kernel_fixed_s = r.number("gpu.kernel_fixed_s");
  g.submit_s = r.number("gpu.submit_s");
  g.finish_s = r.number("gpu.finish_s");
  g.dram_cap_bytes_per_s = r.number("gpu.dram_cap_bytes_per_s");
  g.active_w = r.number("gpu.active_w");
  g.idle_w = r.number("gpu.idle_w", false, true);
  g.profile_scale = r.number("gpu_profile_scale");
  s.npu.dram_cap_bytes_per_s = r.number("npu.dram_cap_bytes_per_s");
  s.npu.submit_s = r.number("npu.submit_s");
  s.npu.blocking_wait_s = r.number("npu.blocking_wait_s");
  s.npu.idle_w = r.number("npu.idle_w", false, true);
  s.npu.calibration.stack_factor = r.number("npu.stack_factor");
  s.npu.calibration.shape_exponent = r.number("npu.shape_exponent", false, true);
  s.npu.calibration.source = r.source_of("npu.stack_factor");
  s.npu.calibration.naive_order_factor = r.number("npu.naive_order_factor");
  s.order_exchange_speedup = r.number("npu.order_exchange_speedup");
  s.dram.theoretical_bytes_per_s = r.number("dram.theoretical_bytes_per_s");
  s.dram.achievable_bytes_per_s = r.number("dram.achievable_bytes_per_s");
  s.dram.pj_per_byte = r.number("dram.pj_per_byte");
  s.sync.usleep_granularity_s = r.number("sync.usleep_granularity_s");
  s.sync.poll_s = r.number("sync.poll_s");
  s.sync.flag_write_s = r.number("sync.flag_write_s");
  s.host.memcpy_bytes_per_s = r.number("host.memcpy_bytes_per_s");
  s.host.active_w = r.number("host.active_w");
  s.host.idle_w = r.number("host.idle_w", false, true);
  s.profile_source = r.string("profile_points.source");
  s.profile_npu_target = r.string("profile_points.npu_target");
  const json* points = r.array("profile_points.points");
  r.check_unknown();
  if (!r.status().ok()) return r.status();

  for (size_t i = 0; i < points->size(); ++i) {
    const json& p = (*points)[i];
    const std::string where = file + ": profile_points.points[" + std::to_string(i) + "]";
    ProfilePoint pp;
    for (const char* k : {"out", "in", "n", "gpu_us", "npu_us"}) {
      if (!p.is_object() || !p.contains(k) || !p[k].is_number() || !(p[k].get<double>() > 0) || !std::isfinite(p[k].get<double>())) {
        return InvalidArgument(where + ": field '" + k + "' must be a positive number, got " +
                               (p.is_object() && p.contains(k) ? p[k].dump() : std::string("nothing")));
      }
    }
    if (p.size() != 5) return InvalidArgument(where + ": has fields other than out, in, n, gpu_us, npu_us");
    for (const char* k : {"out", "in", "n"}) {
      if (!p[k].is_number_integer() || p[k].get<double>() > double(1 << 24)) {
        return InvalidArgument(where + ": field '" + k + "' must be an integer in 1..16777216, got " + p[k].dump());
      }
    }
    pp.out = p["out"].get<int64_t>();
    pp.in = p["in"].get<int64_t>();
    pp.n = p["n"].get<int64_t>();
    pp.gpu_s = p["gpu_us"].get<double>() * 1e-6;
    pp.npu_s = p["npu_us"].get<double>() * 1e-6;
    s.profile_points.push_back(pp);
  }
  if (g.achieved_flops > g.peak_flops) {
    return InvalidArgument(file + ": field 'gpu.achieved_flops' (" + std::to_string(g.achieved_flops) +
                           ") exceeds 'gpu.peak_flops' (" + std::to_string(g.peak_flops) + ")");
  }
  if (s.dram.achievable_bytes_per_s > s.dram.theoretical_bytes_per_s) {
    return InvalidArgument(file + ": field 'dram.achievable_bytes_per_s' exceeds 'dram.theoretical_bytes_per_s'");
  }
  auto fit = fit_gpu_latency(s.profile_points);
  if (!fit.ok()) return InvalidArgument(file + ": " + fit.status().message());
  g.matmul = *fit;
  g.matmul.s_per_flop /= g.profile_scale;
  // The FLOP term may not promise more than the GPU achieves (SEEDS GPU-1).
  g.matmul.s_per_flop = std::max(g.matmul.s_per_flop, 1.0 / g.achieved_flops);

  const std::string target_path = npu_dir + "/" + target + ".json";
  auto t = npu::TargetModel::load(target_path);
  if (!t.ok()) return InvalidArgument(file + ": field 'npu_target' ('" + target + "'): " + t.status().message());
  s.npu_target = std::move(*t);
  // The SoC bounds what its NPU may draw from DRAM (MEM-1's per-processor cap): the target's DMA
  // model takes this SoC's figure.
  s.npu_target.ddr_single_processor_bytes_per_s = s.npu.dram_cap_bytes_per_s;

  return s;
}

}  // namespace

Result<SocModel> SocModel::from_json_text(std::string_view text, const std::string& file, const std::string& npu_dir) {
  TANDEM_ASSIGN_OR_RETURN(json root, parse_json_text(text, file));
  try {
    return parse(root, file, npu_dir);
  } catch (const std::exception& e) {
    return InvalidArgument(file + ": " + e.what());
  }
}

Result<SocModel> SocModel::load(const std::string& path, const std::string& npu_dir) {
  TANDEM_ASSIGN_OR_RETURN(std::string text, read_text_file(path, "SoC description"));
  return from_json_text(text, path, npu_dir);
}

std::string SocModel::data_dir() {
#ifdef TANDEM_DATA_DIR
  return TANDEM_DATA_DIR;
#else
  return "data";
#endif
}

std::vector<std::string> SocModel::names() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir() + "/soc", ec))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

Result<NpuCalibration> SocModel::fit_npu_calibration() const {
  npu::TargetModel measured_on = npu_target;
  if (profile_npu_target != npu_target.name) {
    auto m = npu::TargetModel::load(npu_dir + "/" + profile_npu_target + ".json");
    if (!m.ok()) {
      return InvalidArgument(file + ": field 'profile_points.npu_target' ('" + profile_npu_target + "'): " + m.status().message());
    }
    measured_on = std::move(*m);
  }
  auto cal = sim::fit_npu_calibration(profile_points, measured_on);
  if (!cal.ok()) return InvalidArgument(file + ": " + cal.status().message());
  return cal;
}

Result<double> SocModel::fit_naive_order_factor() const {
  return sim::fit_naive_order_factor(npu_target, kOrderOut, kOrderIn, kOrderN, order_exchange_speedup);
}

Result<SocModel> SocModel::load_named(const std::string& name) {
  const std::vector<std::string> all = names();
  if (std::find(all.begin(), all.end(), name) == all.end()) {
    std::string list;
    for (const std::string& n : all) list += (list.empty() ? "" : ", ") + n;
    return NotFound("--soc: '" + name + "' is not a described SoC (" + (list.empty() ? "none found in " + data_dir() + "/soc" : list) + ")");
  }
  return load(data_dir() + "/soc/" + name + ".json", data_dir() + "/npu");
}

}  // namespace tandem::sim
