#include "planner/device_profiler.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/device_roles.h"
#include "runtime/real_driver.h"

namespace tandem::planner {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const Weight* find_weight(const Model& model, int64_t rows, int64_t cols) {
  const LayerWeights& l = model.layers().at(0);
  for (const Weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
    if (w->rows == rows && w->cols == cols) return w;
  return nullptr;
}

// Wall time of one call: a warm-up run, then the fastest of `reps` submit + wait. The fastest, not
// the median: the profile is cached and reused, so it should hold what the device does, not the
// moment's contention (a test or a build on the same two cores once tripled the npu's median and
// the plan it solved left the npu idle).
Result<double> time_call(devices::Device& d, const graph::OpCall& c, int reps, double* submit_s = nullptr) {
  std::vector<double> t, sub;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = Clock::now();
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<devices::Completion> done, d.submit(c));
    const double submitted = since(t0);
    TANDEM_RETURN_IF_ERROR(done->wait());
    if (r == 0) continue;  // warm-up: first-touch, kernel compile, caches
    t.push_back(since(t0));
    sub.push_back(submitted);
  }
  if (submit_s) *submit_s = *std::min_element(sub.begin(), sub.end());
  return *std::min_element(t.begin(), t.end());
}

double measure_memcpy() {
  std::vector<uint8_t> a(64u << 20, 1), b(64u << 20);
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    t.push_back(since(t0));
    a[size_t(r)] = b[size_t(r) + 1];  // keep the copy observable
  }
  return double(a.size()) / median(t);
}

double measure_usleep() {
  std::vector<double> t;
  for (int r = 0; r < 40; ++r) {
    const auto t0 = Clock::now();
    usleep(1);
    t.push_back(since(t0));
  }
  return median(t);
}

double measure_poll() {
  std::atomic<uint64_t> flag{0};
  const int n = 1 << 20;
  uint64_t sink = 0;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) sink += flag.load(std::memory_order_acquire);
  const double s = since(t0) / n;
  return sink == 0 ? std::max(s, 1e-9) : s;
}

// One handoff from device `a` to device `b` under `mode`: the two-kernel graph minus each kernel
// alone, on the RealDriver (the fastest of runs after a few that teach the fast protocol its
// prediction, as time_call).
Result<double> handoff_seconds(devices::Device& a, devices::Device& b, const graph::OpCall& a_call, const graph::OpCall& b_call,
                               SyncMode mode) {
  RealDriver driver({{a.name(), &a}, {b.name(), &b}}, mode);
  auto graph = [&](bool with_a, bool with_b) {
    TaskGraph g;
    if (with_a) {
      Task t;
      t.device = a.name();
      t.call = a_call;
      t.label = a.name();
      g.add(std::move(t));
    }
    if (with_b) {
      Task t;
      t.device = b.name();
      t.call = b_call;
      if (with_a) t.deps = {0};
      t.label = b.name();
      g.add(std::move(t));
    }
    return g;
  };
  auto timed = [&](const TaskGraph& g) -> Result<double> {
    std::vector<double> t;
    for (int r = 0; r < 12; ++r) {
      const auto t0 = Clock::now();
      TANDEM_RETURN_IF_ERROR(driver.run(g));
      if (r >= 4) t.push_back(since(t0));
    }
    return *std::min_element(t.begin(), t.end());
  };
  TANDEM_ASSIGN_OR_RETURN(double both, timed(graph(true, true)));
  TANDEM_ASSIGN_OR_RETURN(double a_only, timed(graph(true, false)));
  TANDEM_ASSIGN_OR_RETURN(double b_only, timed(graph(false, true)));
  return std::max(1e-7, both - a_only - b_only);
}

// A static-graph device (the npu) runs a shape only once its graph is built.
Result<devices::PrepareReport> prepare_if_static(devices::Device& d, const graph::OpCall& call) {
  if (d.caps().dynamic_shapes) return devices::PrepareReport{true, 0.0};
  return devices::prepare_graph(d, graph::GraphSpec::of(call));
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

Result<DeviceProfile> profile_devices(const std::vector<devices::Device*>& set, const Model& model, const ProfileSpace& space,
                                      int reps, const std::function<void(double)>& progress) {
  const auto t0 = Clock::now();
  if (space.shapes.empty()) return InvalidArgument("profile: no matmul shapes to profile");
  if (reps < 1 || reps > 100) return InvalidArgument("profile: --reps " + std::to_string(reps) + " must be in 1..100");
  std::vector<std::pair<std::string, devices::DeviceKind>> kinds;
  for (devices::Device* d : set) {
    if (!d) return InvalidArgument("profile: a device of the set is not open");
    kinds.emplace_back(d->name(), d->caps().kind);
  }
  TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, assign_roles(kinds, "--devices"));
  DeviceProfile out;
  CostDb& db = out.db;
  HostMeasurements& h = out.host;
  h.cpu_name = cpu_model_name();
  std::string names;
  for (size_t i = 0; i < set.size(); ++i) {
    const DeviceRoles::Member& m = roles.members[i];
    h.devices.push_back(MeasuredDevice{m.name, m.kind, m.role, devices::device_kind_name(m.kind), 0, 0});
    names += (i ? "," : "") + m.name;
  }
  db.source = "devices " + names + " on " + h.cpu_name;
  db.weight_type = dtype_name(model.layers().at(0).wq.type);
  db.standard_lengths = space.standard_lengths;
  std::sort(db.standard_lengths.begin(), db.standard_lengths.end());
  std::vector<int64_t> lengths = {1};
  for (int L : db.standard_lengths) lengths.push_back(L);

  const std::vector<ProfileJob> jobs = profile_jobs(space, 32);
  std::vector<double> prep_bytes, prep_s;  // graph builds of the device in the NPU's role
  const size_t total = jobs.size() * lengths.size();
  size_t done = 0;
  for (const ProfileJob& j : jobs) {
    const Weight* w = find_weight(model, j.parent_rows, j.in);
    if (!w) return NotFound("profile: the model has no weight " + std::to_string(j.parent_rows) + "x" + std::to_string(j.in));
    for (int64_t n : lengths) {
      std::vector<float> x(size_t(n * j.in)), y(size_t(n * j.parent_rows));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) * 0.05f;
      const graph::OpCall call = graph::OpCall::matmul(w, 0, j.rows, x.data(), n, j.in, y.data(), j.parent_rows);
      sim::ProfilePoint point{j.rows, j.in, n, {}};
      for (size_t i = 0; i < set.size(); ++i) {
        devices::Device& d = *set[i];
        const MeasuredDevice& m = h.devices[i];
        TANDEM_ASSIGN_OR_RETURN(devices::PrepareReport pr, prepare_if_static(d, call));
        if (!pr.cached && m.name == roles.npu) {
          prep_bytes.push_back(double(n * (j.in + j.rows) * 2));
          prep_s.push_back(pr.prepare_seconds);
        }
        TANDEM_ASSIGN_OR_RETURN(double t, time_call(d, call, reps));
        db.add(m.role, j.rows, j.in, n, t, j.parent_rows);
        point.seconds[m.unit] = t;
      }
      if (j.rows == j.parent_rows && (n == 1 || n == lengths.back())) h.points.push_back(point);
      if (progress) progress(double(++done) / double(total + 1));
    }
  }

  // The NPU's graph build: fixed + per byte, least squares over the graphs built above.
  {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, k = double(prep_s.size());
    for (size_t i = 0; i < prep_s.size(); ++i) {
      sx += prep_bytes[i]; sy += prep_s[i]; sxx += prep_bytes[i] * prep_bytes[i]; sxy += prep_bytes[i] * prep_s[i];
    }
    const double var = k * sxx - sx * sx;
    db.prepare_per_byte_s = var > 0 ? std::max(0.0, (k * sxy - sx * sy) / var) : 0.0;
    db.prepare_fixed_s = k > 0 ? std::max(0.0, (sy - db.prepare_per_byte_s * sx) / k) : 0.0;
  }

  // Sync and host costs on the smallest profiled part (the handoffs decode pays).
  const ProfileJob& small = *std::min_element(jobs.begin(), jobs.end(), [](const ProfileJob& a, const ProfileJob& b) {
    return a.rows * a.in < b.rows * b.in;
  });
  const Weight* w = find_weight(model, small.parent_rows, small.in);
  std::vector<float> x(size_t(small.in), 0.01f), y1(size_t(small.parent_rows)), y2(size_t(small.parent_rows));
  const graph::OpCall a_call = graph::OpCall::matmul(w, 0, small.rows, x.data(), 1, small.in, y1.data(), small.parent_rows);
  const graph::OpCall b_call = graph::OpCall::matmul(w, 0, small.rows, x.data(), 1, small.in, y2.data(), small.parent_rows);
  for (size_t i = 0; i < set.size(); ++i) {
    TANDEM_RETURN_IF_ERROR(prepare_if_static(*set[i], a_call).status());
    MeasuredDevice& m = h.devices[i];
    TANDEM_ASSIGN_OR_RETURN(m.roundtrip_s, time_call(*set[i], a_call, 20, &m.submit_s));
  }
  // The handoff the runtime pays most: from the GPU's role to the NPU's (or to the fallback); with
  // one device there is none.
  const std::string to = roles.handoff_target();
  if (to.empty()) {
    h.handoff = "not measured: one device (" + names + "), no handoff between devices";
  } else {
    // Roles name devices of the set, whose members are in the set's order.
    auto device_named = [&](const std::string& name) -> devices::Device& {
      return *set[size_t(roles.find(name) - roles.members.data())];
    };
    devices::Device& a = device_named(roles.gpu);
    devices::Device& b = device_named(to);
    TANDEM_RETURN_IF_ERROR(prepare_if_static(b, b_call).status());
    TANDEM_ASSIGN_OR_RETURN(db.sync_fast_s, handoff_seconds(a, b, a_call, b_call, SyncMode::kFast));
    TANDEM_ASSIGN_OR_RETURN(db.sync_blocking_s, handoff_seconds(a, b, a_call, b_call, SyncMode::kBlocking));
    h.handoff = roles.gpu + " -> " + to;
    h.handoff_measured = true;
  }
  h.memcpy_bytes_per_s = measure_memcpy();
  h.usleep_granularity_s = measure_usleep();
  h.poll_s = measure_poll();
  db.copy_bytes_per_s = h.memcpy_bytes_per_s;
  db.profile_seconds = since(t0);
  if (progress) progress(1.0);
  return out;
}

Result<std::string> host_soc_json(const DeviceProfile& p, const std::string& npu_target, const std::string& npu_dir) {
  const HostMeasurements& h = p.host;
  if (h.points.size() < 3) return InvalidArgument("host SoC: needs at least 3 whole-weight points (profile more shapes or lengths)");
  if (h.devices.empty()) return InvalidArgument("host SoC: the profile measured no device");
  using nlohmann::json;
  std::string set, which;
  for (const MeasuredDevice& d : h.devices) {
    set += (set.empty() ? "" : ",") + d.name;
    which += (which.empty() ? "" : "; ") + std::string("unit '") + d.unit + "' is the " + d.name + " device" +
             (d.kind == devices::DeviceKind::kNpu ? " (the emulated " + npu_target + ": a functional model; its wall clock is what the profile points measure)"
                                                  : std::string());
  }
  const std::string by = "measured by tandem profile --devices " + set + " on " + h.cpu_name;
  auto leaf = [](double v, const std::string& src) { return json{{"value", v}, {"source", src}}; };
  const double bw = h.memcpy_bytes_per_s;
  json units = json::object();
  bool has_npu = false;
  for (const MeasuredDevice& d : h.devices) {
    if (d.kind == devices::DeviceKind::kNpu) {
      has_npu = true;
      units[d.unit] = {
          {"kind", d.unit},
          {"target", npu_target},
          {"dram_cap_bytes_per_s", leaf(bw, by + ": memcpy bandwidth (the emulator runs on the same cores)")},
          {"submit_s", leaf(std::max(1e-8, d.submit_s), by + ": host time inside submit() of the smallest graph")},
          {"blocking_wait_s", leaf(std::max(1e-7, d.roundtrip_s), by + ": the smallest graph's round trip")},
          {"idle_w", leaf(1.0, "assumption: no power meter here; idle cores")},
          {"order_exchange_speedup", leaf(1.0, "assumption: not measured on this machine (the npu device always runs the exchanged order)")},
          {"naive_order_factor", leaf(1.0, "fitted (SocModel::fit_naive_order_factor) from order_exchange_speedup: 1 when the target model alone explains it")},
          {"stack_factor", leaf(1.0, "placeholder, replaced below by the fit")},
          {"shape_exponent", leaf(0.0, "placeholder, replaced below by the fit")}};
      continue;
    }
    double best_flops = 0;
    for (const sim::ProfilePoint& pt : h.points) best_flops = std::max(best_flops, pt.flops() / pt.seconds_on(d.unit));
    units[d.unit] = {
        {"kind", d.unit},
        {"peak_flops", leaf(best_flops, by + ": no vendor peak for the " + d.name + " device; the best achieved on the profile points")},
        {"achieved_flops", leaf(best_flops, by + ": the best FLOP rate of the " + d.name + " device over the profile points")},
        {"kernel_fixed_s", leaf(std::max(1e-7, d.roundtrip_s), by + ": submit + blocking wait of the smallest profiled kernel")},
        {"submit_s", leaf(std::max(1e-8, d.submit_s), by + ": host time inside submit() of the smallest kernel")},
        {"finish_s", leaf(std::max(1e-7, d.roundtrip_s), by + ": a blocking wait, as the smallest kernel's round trip")},
        {"dram_cap_bytes_per_s", leaf(bw, by + ": memcpy bandwidth (the " + d.name + " device is the same cores and memory)")},
        {"active_w", leaf(15.0, "assumption: no power meter here; ~15 W for two busy desktop cores")},
        {"idle_w", leaf(1.0, "assumption: no power meter here; idle cores")},
        {"profile_scale", leaf(1.0, "the profile points below were measured on this machine: no scaling")}};
  }
  json points = json::array();
  for (const sim::ProfilePoint& pt : h.points) {
    json q = {{"out", pt.out}, {"in", pt.in}, {"n", pt.n}};
    for (const MeasuredDevice& d : h.devices) q[d.unit + "_us"] = pt.seconds_on(d.unit) * 1e6;
    points.push_back(q);
  }
  json profile = {{"source", by + ": whole weights of the model's splittable shapes at n = 1 and the largest standard length; wall "
                                  "microseconds on each unit"},
                  {"points", points}};
  if (has_npu) profile["npu_target"] = npu_target;
  json j = {
      {"name", "host"},
      {"description", "This machine as tandem's devices see it, on " + h.cpu_name + ": " + which +
                          ". Regenerate on your machine with: tandem profile --devices " + set +
                          " -m MODEL -o costdb.json --soc-out data/soc/host.json"},
      {"units", units},
      {"dram",
       {{"theoretical_bytes_per_s", leaf(bw, by + ": memcpy bandwidth; the theoretical peak of this machine is not known to tandem")},
        {"achievable_bytes_per_s", leaf(bw, by + ": memcpy bandwidth")},
        {"pj_per_byte", leaf(20.0, "assumption: DDR access ~20 pJ/B")}}},
      {"sync",
       {{"usleep_granularity_s", leaf(h.usleep_granularity_s, by + ": median real duration of usleep(1)")},
        {"poll_s", leaf(std::max(1e-9, h.poll_s), by + ": one acquire load of a flag")},
        {"flag_write_s", leaf(std::max(1e-9, h.poll_s), by + ": as one flag access (a store on the same cores)")}}},
      {"host",
       {{"memcpy_bytes_per_s", leaf(bw, by + ": memcpy of 64 MiB")},
        {"active_w", leaf(7.5, "assumption: one busy desktop core")},
        {"idle_w", leaf(0.5, "assumption: one idle core")}}},
      {"profile_points", profile}};
  // Fit each npu unit's calibration to the emulator's wall clock and write it in.
  TANDEM_ASSIGN_OR_RETURN(sim::SocModel draft, sim::SocModel::from_json_text(j.dump(), "host.json", npu_dir));
  for (const sim::ComputeUnit& u : draft.units) {
    if (!u.static_graphs()) continue;
    TANDEM_ASSIGN_OR_RETURN(sim::NpuCalibration cal, draft.fit_npu_calibration(u));
    const std::string fit = "fitted (sim/npu_calibration.h) to this file's NPU profile points against the " + npu_target + " target model";
    j["units"][u.name]["stack_factor"] = leaf(cal.stack_factor, fit + ": the emulator's wall clock over the modeled time");
    j["units"][u.name]["shape_exponent"] = leaf(cal.shape_exponent, fit);
  }
  TANDEM_RETURN_IF_ERROR(sim::SocModel::from_json_text(j.dump(), "host.json", npu_dir).status());
  return j.dump(2) + "\n";
}

}  // namespace tandem::planner
