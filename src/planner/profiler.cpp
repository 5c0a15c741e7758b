#include "planner/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "runtime/device_roles.h"
#include "sim/sim_driver.h"

namespace tandem::planner {

std::vector<MatmulShape> splittable_shapes(const Model& model) {
  std::vector<MatmulShape> out;
  const LayerWeights& l = model.layers().at(0);
  for (auto [name, w] : {std::pair{"attn_q", &l.wq}, {"attn_k", &l.wk}, {"attn_v", &l.wv}, {"attn_output", &l.wo},
                         {"ffn_gate", &l.w_gate}, {"ffn_up", &l.w_up}, {"ffn_down", &l.w_down}}) {
    auto same = std::find_if(out.begin(), out.end(), [&](const MatmulShape& s) { return s.out == w->rows && s.in == w->cols; });
    if (same != out.end()) {
      same->name += "," + std::string(name);
    } else {
      out.push_back(MatmulShape{name, w->rows, w->cols});
    }
  }
  return out;
}

namespace {

float* fake(uintptr_t slot) { return reinterpret_cast<float*>((uintptr_t(1) << 40) + (slot << 30)); }

// The first `rows` rows of weight w (all of them by default), as a partitioner cuts a part.
Task matmul_task(const Weight& w, int64_t n, const std::string& device, int64_t rows = -1) {
  if (rows < 0) rows = w.rows;
  Task t;
  t.device = device;
  t.call = graph::OpCall::matmul(&w, 0, rows, fake(0), n, w.cols, fake(1), rows);
  t.label = device + " " + std::to_string(rows) + "x" + std::to_string(w.cols) + " n=" + std::to_string(n);
  return t;
}

// One handoff from unit `from` to unit `to` under each protocol, measured on the SimDriver (the
// second of two runs: the fast protocol has its prediction by then).
Result<double> handoff_seconds(const sim::SocModel& soc, SyncMode mode, const Weight& w, const std::string& from, const std::string& to) {
  sim::SimDriver d(soc, mode);
  TaskGraph g;
  g.add(matmul_task(w, 1, from));
  Task consumer = matmul_task(w, 1, to);
  consumer.deps = {0};
  g.add(consumer);
  TANDEM_RETURN_IF_ERROR(d.run(g));
  const double before = d.stats().handoff_seconds;
  TANDEM_RETURN_IF_ERROR(d.run(g));
  return d.stats().handoff_seconds - before;
}

}  // namespace

std::vector<ProfileJob> profile_jobs(const ProfileSpace& space, int64_t tile) {
  std::vector<ProfileJob> jobs;
  for (const MatmulShape& s : space.shapes) {
    std::set<int64_t> rows = {s.out};
    for (double r : space.ratios) {
      const int64_t npu = int64_t(std::llround(double(s.out) * (1.0 - r) / double(tile))) * tile;
      if (npu < tile || npu >= s.out) continue;
      rows.insert(npu);
      rows.insert(s.out - npu);
    }
    for (int64_t r : rows) jobs.push_back(ProfileJob{r, s.in, s.out});
  }
  return jobs;
}

Result<CostDb> profile_soc(const sim::SocModel& soc, const ProfileSpace& space, const std::function<void(double)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  if (space.shapes.empty()) return InvalidArgument("profile: no matmul shapes to profile");
  // The SoC's units by role: each point is timed on every unit and recorded under its role.
  TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, soc.roles());
  const sim::ComputeUnit* npu = roles.npu.empty() ? nullptr : soc.find(roles.npu);
  CostDb db;
  db.source = "soc " + soc.name;
  db.weight_type = dtype_name(space.weight_type);
  db.standard_lengths = space.standard_lengths;
  std::sort(db.standard_lengths.begin(), db.standard_lengths.end());
  db.copy_bytes_per_s = soc.host.memcpy_bytes_per_s;
  db.prepare_fixed_s = npu ? npu->npu.target.prepare.fixed_s : 0.0;
  db.prepare_per_byte_s = npu ? npu->npu.target.prepare.per_byte_s : 0.0;
  // The NPU's parts are whole tiles of its arrays (without an npu, the partitioner's 32 rows).
  const int64_t tile = npu ? npu->npu.target.matrix.tile_dim : 32;

  std::vector<int64_t> lengths = {1};
  for (int L : db.standard_lengths) lengths.push_back(L);
  const std::vector<ProfileJob> jobs = profile_jobs(space, tile);
  sim::TaskCostModel costs(soc);
  if (space.npu_cache) costs.set_compile_cache(space.npu_cache);
  const size_t total = jobs.size() * lengths.size();
  size_t done = 0;
  for (const ProfileJob& j : jobs) {
    const Weight w{"profiled", space.weight_type, nullptr, j.parent_rows, j.in};
    for (int64_t n : lengths) {
      for (const DeviceRoles::Member& m : roles.members) {
        TANDEM_ASSIGN_OR_RETURN(sim::TaskCost c, costs.cost(matmul_task(w, n, m.name, j.rows), soc.find(m.name)));
        db.add(m.role, j.rows, j.in, n, c.seconds, j.parent_rows);
      }
      if (progress) progress(double(++done) / double(total));
    }
  }
  // The handoff the runtime pays most: the GPU's role to the NPU's (or to the fallback).
  const std::string to = roles.handoff_target();
  if (!to.empty()) {
    const MatmulShape& first = space.shapes.front();
    const Weight probe{"probe", space.weight_type, nullptr, first.out, first.in};
    TANDEM_ASSIGN_OR_RETURN(db.sync_fast_s, handoff_seconds(soc, SyncMode::kFast, probe, roles.gpu, to));
    TANDEM_ASSIGN_OR_RETURN(db.sync_blocking_s, handoff_seconds(soc, SyncMode::kBlocking, probe, roles.gpu, to));
  }
  db.profile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return db;
}

}  // namespace tandem::planner
