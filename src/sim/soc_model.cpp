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

Result<GpuLatencyModel> fit_gpu_latency(const std::vector<ProfilePoint>& points) {
  if (points.size() < 3) {
    return InvalidArgument("gpu latency fit: needs at least 3 profile points, got " + std::to_string(points.size()));
  }
  // Minimize sum ((model(p) - t_p) / t_p)^2 over (fixed, s/byte, s/flop): every point counts by its
  // relative error, so the short decode kernels weigh as much as the long prefill ones. Columns are
  // scaled to O(1) (us, MB, GFLOP) for a well-conditioned 3x3 solve.
  std::array<std::array<double, 4>, 3> m{};  // normal equations [A^T A | A^T b]
  for (const ProfilePoint& p : points) {
    if (!(p.gpu_s > 0)) return InvalidArgument("gpu latency fit: a profile point has no GPU time");
    const double t = p.gpu_s * 1e6;
    const std::array<double, 3> row = {1.0 / t, (p.weight_bytes() + p.activation_bytes()) / 1e6 / t, p.flops() / 1e9 / t};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) m[size_t(i)][size_t(j)] += row[size_t(i)] * row[size_t(j)];
      m[size_t(i)][3] += row[size_t(i)];
    }
  }
  for (int c = 0; c < 3; ++c) {  // Gauss-Jordan with partial pivoting
    int piv = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(m[size_t(r)][size_t(c)]) > std::abs(m[size_t(piv)][size_t(c)])) piv = r;
    std::swap(m[size_t(c)], m[size_t(piv)]);
    if (std::abs(m[size_t(c)][size_t(c)]) < 1e-300) return InvalidArgument("gpu latency fit: the profile points are degenerate");
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = m[size_t(r)][size_t(c)] / m[size_t(c)][size_t(c)];
      for (int k = c; k < 4; ++k) m[size_t(r)][size_t(k)] -= f * m[size_t(c)][size_t(k)];
    }
  }
  GpuLatencyModel g;
  g.fixed_s = m[0][3] / m[0][0] * 1e-6;
  g.s_per_byte = m[1][3] / m[1][1] * 1e-6 / 1e6;
  g.s_per_flop = m[2][3] / m[2][2] * 1e-6 / 1e9;
  if (!(g.fixed_s > 0 && g.s_per_byte > 0 && g.s_per_flop > 0)) {
    return InvalidArgument("gpu latency fit: the profile points give a non-positive coefficient (fixed " +
                           std::to_string(g.fixed_s) + " s, " + std::to_string(g.s_per_byte) + " s/B, " +
                           std::to_string(g.s_per_flop) + " s/FLOP)");
  }
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
