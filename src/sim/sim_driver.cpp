#include "sim/sim_driver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace tandem::sim {

namespace {

int64_t to_ns(double s) { return int64_t(std::llround(s * 1e9)); }

// The bytes a kernel writes, at fp16 as on the phone: what a framework without a shared pool
// copies to the host and on to the next device.
double output_bytes(const Task& t) {
  if (!t.call) return double(t.host_bytes);
  const graph::OpCall& c = *t.call;
  const double rows = double(c.out.rows);
  switch (c.kind) {
    case graph::OpKind::kMatmul:
      return rows * double(c.row_end - c.row_begin) * 2.0;
    case graph::OpKind::kNormLinear: {
      double b = 0;
      for (int i = 0; i < c.n_proj; ++i) b += rows * double(c.proj[size_t(i)].weight->rows) * 2.0;
      return b;
    }
    default:
      return rows * double(c.out.cols) * 2.0;
  }
}

}  // namespace

SimDriver::SimDriver(const SocModel& soc, SyncMode sync) : soc_(soc), sync_(sync), costs_(soc) {
  fast_params_.sleep_granularity_ns = to_ns(soc.sync.usleep_granularity_s);
  for (const ComputeUnit& u : soc.units) names_.push_back(u.name);
  host_ = names_.size();
  names_.push_back("host");
  unit_free_at_.assign(names_.size(), 0.0);
  model_energy_.assign(names_.size(), 0.0);
  for (const std::string& name : names_) tracks_[name] = trace_.add_track(name);
  for (const char* name : {"sync", "phase"}) tracks_[name] = trace_.add_track(name);
}

Result<size_t> SimDriver::queue_of(const std::string& device) const {
  if (device == "host") return host_;
  return soc_.unit_for_device(device);
}

void SimDriver::record(size_t unit, const std::string& name, double start, double end, const char* category) {
  trace_.complete(tracks_.at(names_[unit]), name, category, to_ns(start), std::max<int64_t>(0, to_ns(end) - to_ns(start)));
}

Status SimDriver::charge_prepare(const std::string& device, double seconds, const std::string& what) {
  TANDEM_ASSIGN_OR_RETURN(size_t q, queue_of(device));
  double& free_at = unit_free_at_[q];
  const double start = std::max(free_at, now_);
  free_at = start + seconds;
  stats_.runtime_prepare_seconds += seconds;
  stats_.busy_seconds[names_[q]] += seconds;
  record(q, "prepare " + what, start, free_at, "prepare");
  return Status::Ok();
}

void SimDriver::mark_phase(const std::string& name, double start_s) {
  trace_.complete(tracks_.at("phase"), name, "phase", to_ns(start_s), std::max<int64_t>(0, to_ns(now_) - to_ns(start_s)));
}

double SimDriver::handoff_delay(const Task& producer, size_t pu, double start, double end, size_t cu) {
  // The host thread that did a host step knows at once; it still submits the consumer.
  const double submit = cu == host_ ? 0.0 : unit_at(cu)->submit_s();
  if (pu == host_) return submit;
  sync::ReplayCosts c;
  c.sleep_overshoot_ns = to_ns(soc_.sync.usleep_granularity_s);
  c.poll_interval_ns = std::max<int64_t>(1, to_ns(soc_.sync.poll_s));
  c.block_wake_ns = to_ns(unit_at(pu)->blocking_wait_s());
  // The flag (or the event a blocking wait sleeps on) is raised a little after the output.
  const int64_t actual = to_ns(end - start + soc_.sync.flag_write_s);
  sync::ReplayResult r;
  if (sync_ == SyncMode::kFast) {
    const std::string key = task_shape_key(producer, names_[pu]);
    const int64_t predicted = int64_t(predictor_.predict(key).value_or(0));
    r = sync::replay_fast_wait(fast_params_, predicted, actual, c);
    predictor_.observe(key, actual);
    stats_.fast_fallbacks += r.fell_back;
  } else {
    r = sync::replay_blocking_wait(actual, c);
  }
  stats_.host_active_seconds += double(r.polled_ns) * 1e-9 + submit;
  const double detected = start + double(r.resume_ns) * 1e-9;
  double copy = 0;
  if (copy_and_finish_) {  // device -> host, then host -> device
    copy = 2.0 * output_bytes(producer) / soc_.host.memcpy_bytes_per_s;
    stats_.baseline_copy_seconds += copy;
    stats_.host_active_seconds += copy;
  }
  return std::max(0.0, detected - end) + copy + submit;
}

std::vector<double> SimDriver::bandwidth_factors(const std::vector<Running>& running) const {
  // Max-min fair division of the achievable DRAM bandwidth by what each task asks for alone.
  std::vector<double> factor(running.size(), 1.0);
  double total = 0;
  for (const Running& r : running) total += r.demand;
  const double capacity = soc_.dram.achievable_bytes_per_s;
  if (total <= capacity) return factor;
  std::vector<size_t> order(running.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return running[a].demand != running[b].demand ? running[a].demand < running[b].demand : running[a].task < running[b].task;
  });
  double left = capacity;
  size_t remaining = order.size();
  for (size_t i : order) {
    const double share = left / double(remaining);
    const double grant = std::min(running[i].demand, share);
    factor[i] = running[i].demand > 0 ? grant / running[i].demand : 1.0;
    left -= grant;
    --remaining;
  }
  return factor;
}

Status SimDriver::run(const TaskGraph& g) {
  TANDEM_RETURN_IF_ERROR(g.verify());
  const bool game = load_.period_s > 0 || load_.busy_s > 0;
  size_t game_q = 0;
  if (game) {
    auto q = soc_.unit_for_device(load_.unit);
    if (!q.ok() || soc_.units[*q].name != load_.unit) {
      return InvalidArgument("simulator: the periodic load's unit '" + load_.unit + "' is not a unit of " + soc_.name + " (" + soc_.unit_names() + ")");
    }
    if (!(load_.period_s > 0) || !(load_.busy_s > 0) || load_.busy_s > load_.period_s || !(load_.bytes >= 0)) {
      return InvalidArgument("simulator: a periodic load needs 0 < busy (" + std::to_string(load_.busy_s) + " s) <= period (" +
                             std::to_string(load_.period_s) + " s) and bytes >= 0");
    }
    game_q = *q;
  }
  const std::vector<Task>& tasks = g.tasks();
  const size_t n = tasks.size();
  std::vector<size_t> unit(n);
  std::vector<TaskCost> cost(n);
  std::vector<int> waiting(n);
  std::vector<std::vector<int>> dependents(n);
  // For a load that waits for the submitted queue. The host submits a task to its unit's in-order
  // queue once its inputs from other units have ended and its inputs on the same unit have been
  // submitted (the copy-and-finish baseline: once every input has ended). Per task: its inputs not
  // yet that far; and when the game unit's submitted, unfinished tasks were submitted (a frame
  // goes first only when it arrived before all of them).
  std::vector<int> unsubmitted_inputs;
  std::multiset<double> game_submitted_at;
  std::vector<double> submitted_at(n, 0);
  std::vector<double> ready_at(n, now_), started(n, 0), ended(n, 0);
  for (const Task& t : tasks) {
    TANDEM_ASSIGN_OR_RETURN(unit[size_t(t.id)], queue_of(t.device));
    TANDEM_ASSIGN_OR_RETURN(cost[size_t(t.id)], costs_.cost(t, unit_at(unit[size_t(t.id)])));
    waiting[size_t(t.id)] = int(t.deps.size());
    for (int d : t.deps) dependents[size_t(d)].push_back(t.id);
  }
  const bool frames_after_submitted = game && load_.after_submitted;
  auto submitted_after_end = [&](int input, int task) { return copy_and_finish_ || unit[size_t(input)] != unit[size_t(task)]; };
  // Submits `first` and every task that its submission lets the host submit too.
  auto submit = [&](int first) {
    std::vector<int> work{first};
    while (!work.empty()) {
      const int id = work.back();
      work.pop_back();
      submitted_at[size_t(id)] = now_;
      if (unit[size_t(id)] == game_q) game_submitted_at.insert(now_);
      for (int d : dependents[size_t(id)])
        if (!submitted_after_end(id, d) && --unsubmitted_inputs[size_t(d)] == 0) work.push_back(d);
    }
  };
  if (frames_after_submitted) {
    unsubmitted_inputs = waiting;  // every input counts until it is submitted or has ended
    for (const Task& t : tasks)
      if (t.deps.empty()) submit(t.id);
  }
  auto frame_may_start = [&] {
    return !frames_after_submitted || game_submitted_at.empty() || frame_arrival_.at(frames_waiting_.front()) < *game_submitted_at.begin();
  };
  // Per unit: tasks whose dependencies are done, by (ready time, id).
  const size_t units = names_.size();
  std::vector<std::vector<int>> queued(units);
  for (const Task& t : tasks)
    if (waiting[size_t(t.id)] == 0) queued[unit[size_t(t.id)]].push_back(t.id);
  std::vector<Running> running = std::move(carry_);  // frames of the periodic load still running
  carry_.clear();
  size_t finished = 0;
  while (finished < n) {
    for (; game && next_frame_at_ <= now_; next_frame_at_ += load_.period_s) {
      const int serial = int(stats_.frames++);
      frames_waiting_.push_back(serial);
      frame_arrival_[serial] = next_frame_at_;
    }
    // Start what can start now on every idle unit.
    for (size_t u = 0; u < units; ++u) {
      const bool busy = std::any_of(running.begin(), running.end(), [&](const Running& r) { return r.unit == u; });
      if (busy || unit_free_at_[u] > now_) continue;
      auto best = std::min_element(queued[u].begin(), queued[u].end(), [&](int a, int b) {
        return ready_at[size_t(a)] != ready_at[size_t(b)] ? ready_at[size_t(a)] < ready_at[size_t(b)] : a < b;
      });
      const bool task_ready = best != queued[u].end() && ready_at[size_t(*best)] <= now_;
      if (game && u == game_q && !frames_waiting_.empty() && frame_may_start() &&
          !(task_ready && ready_at[size_t(*best)] < frame_arrival_.at(frames_waiting_.front()))) {
        const int serial = frames_waiting_.front();
        frames_waiting_.pop_front();
        running.push_back(Running{-1 - serial, u, now_, 1.0, load_.busy_s, load_.bytes / load_.busy_s});
        continue;
      }
      if (!task_ready) continue;
      const int id = *best;
      queued[u].erase(best);
      const TaskCost& c = cost[size_t(id)];
      started[size_t(id)] = now_;
      running.push_back(Running{id, u, now_, 1.0, c.seconds, c.seconds > 0 ? c.dram_bytes / c.seconds : 0.0});
    }
    // The next event: a running task finishes, or a queued task becomes ready on an idle unit.
    const std::vector<double> factor = bandwidth_factors(running);
    double next = std::numeric_limits<double>::infinity();
    std::vector<double> ends(running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      const Running& r = running[i];
      ends[i] = r.alone <= 0 ? now_ : now_ + r.remaining * r.alone / factor[i];
      next = std::min(next, ends[i]);
    }
    for (size_t u = 0; u < units; ++u) {
      const bool busy = std::any_of(running.begin(), running.end(), [&](const Running& r) { return r.unit == u; });
      if (busy) continue;
      for (int id : queued[u]) next = std::min(next, std::max({ready_at[size_t(id)], unit_free_at_[u], now_}));
      if (game && u == game_q && !frames_waiting_.empty() && frame_may_start()) next = std::min(next, std::max(unit_free_at_[u], now_));
    }
    if (game) next = std::min(next, next_frame_at_);
    if (!std::isfinite(next)) return Internal("simulator: no task can run (a dependency cycle?)");
    // Advance to it.
    const double dt = next - now_;
    for (size_t i = 0; i < running.size(); ++i) {
      Running& r = running[i];
      // A task whose end is this event is done exactly (no rounding residue keeps it alive).
      r.remaining = ends[i] <= next ? 0.0 : r.remaining - dt * factor[i] / r.alone;
    }
    now_ = next;
    clock_.advance_to(to_ns(now_));
    // Finish every task that is done (by id, for determinism).
    std::sort(running.begin(), running.end(), [](const Running& a, const Running& b) { return a.task < b.task; });
    for (size_t i = 0; i < running.size();) {
      Running& r = running[i];
      if (r.remaining > 0) {
        ++i;
        continue;
      }
      if (r.task < 0) {  // a frame of the periodic load
        const int serial = -1 - r.task;
        const double arrival = frame_arrival_.at(serial);
        frame_arrival_.erase(serial);
        stats_.frames_kept += now_ <= arrival + load_.period_s * (1 + 1e-12) ? 1 : 0;
        stats_.frame_busy_seconds += now_ - r.start;
        record(r.unit, "frame " + std::to_string(serial), r.start, now_, "frame");
        running.erase(running.begin() + std::ptrdiff_t(i));
        continue;
      }
      const int id = r.task;
      const Task& t = tasks[size_t(id)];
      ended[size_t(id)] = now_;
      ++finished;
      ++stats_.tasks;
      stats_.dram_bytes += cost[size_t(id)].dram_bytes;
      stats_.busy_seconds[names_[r.unit]] += now_ - r.start;
      stats_.npu_energy_j += cost[size_t(id)].npu_energy_j;
      model_energy_[r.unit] += cost[size_t(id)].npu_energy_j;
      const ComputeUnit* ru = unit_at(r.unit);
      if (!ru || !ru->static_graphs()) dram_energy_bytes_ += cost[size_t(id)].dram_bytes;
      if (r.unit == host_) stats_.host_active_seconds += now_ - r.start;
      record(r.unit, t.label, r.start, now_, "kernel");
      if (copy_and_finish_ && ru && !ru->static_graphs()) {
        // The host returns from clFinish, then submits the unit's next kernel.
        const double gap = ru->kernels.finish_s + ru->kernels.submit_s;
        unit_free_at_[r.unit] = std::max(unit_free_at_[r.unit], now_ + gap);
        stats_.baseline_finish_seconds += gap;
      }
      if (frames_after_submitted && r.unit == game_q) game_submitted_at.erase(game_submitted_at.find(submitted_at[size_t(id)]));
      for (int next_id : dependents[size_t(id)]) {
        const size_t cu = unit[size_t(next_id)];
        if (frames_after_submitted && submitted_after_end(id, next_id) && --unsubmitted_inputs[size_t(next_id)] == 0) submit(next_id);
        double at = now_;
        if (cu != r.unit) {
          const double delay = handoff_delay(t, r.unit, r.start, now_, cu);
          stats_.handoff_seconds += delay;
          ++stats_.handoffs;
          if (delay > 0) trace_.complete(tracks_.at("sync"), "handoff to " + tasks[size_t(next_id)].label, "sync", to_ns(now_), to_ns(delay));
          at += delay;
        }
        ready_at[size_t(next_id)] = std::max(ready_at[size_t(next_id)], at);
        if (--waiting[size_t(next_id)] == 0) queued[cu].push_back(next_id);
      }
      running.erase(running.begin() + std::ptrdiff_t(i));
    }
  }
  carry_ = std::move(running);  // only frames can be left: every task of the graph has ended
  return Status::Ok();
}

double SimDriver::energy_joules() const {
  auto busy = [&](const std::string& u) {
    auto it = stats_.busy_seconds.find(u);
    return it == stats_.busy_seconds.end() ? 0.0 : it->second;
  };
  const double T = now_;
  double e = 0;
  for (size_t q = 0; q < host_; ++q) {
    const ComputeUnit& u = soc_.units[q];
    const double b = busy(u.name);
    if (u.static_graphs()) {
      e += model_energy_[q] + u.npu.idle_w * std::max(0.0, T - b);
    } else {
      e += u.kernels.active_w * b + u.kernels.idle_w * std::max(0.0, T - b);
    }
  }
  const double host_active = std::min(T, stats_.host_active_seconds);
  e += soc_.host.active_w * host_active + soc_.host.idle_w * (T - host_active);
  // An npu's DMA traffic is in its own energy; the other units' and the host's go through DRAM here.
  e += soc_.dram.pj_per_byte * 1e-12 * dram_energy_bytes_;
  return e;
}

Status SimDriver::write_trace(const std::string& path) const { return trace_.write_file(path); }

}  // namespace tandem::sim
