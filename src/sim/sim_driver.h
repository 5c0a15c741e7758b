// The SimDriver: runs a TaskGraph in virtual time over a SoC model — the same TaskGraph the
// RealDriver runs on real devices ("one scheduler, two clocks"). Deterministic: the same graphs
// and SoC give the same timeline, bit for bit.
//
// The machine it models (HeteroInfer's engine on a phone):
//   - one in-order queue per unit of the SoC (its compute units, sim/soc_model.h, and the host):
//     a unit runs one task at a time, in the order tasks became ready (ties by task id). Kernels
//     on one unit follow each other with no sync, as a GPU queue enqueued ahead does. A task runs
//     on the unit its device maps to (SocModel::unit_for_device); a device the SoC has no unit
//     for is an error naming it.
//   - a dependency across units is a handoff: the host learns the producer finished by the sync
//     protocol — fast (sleep for the predicted time in usleep quanta, then poll the flag; the
//     prediction is the previous kernel of the same shape) or blocking (clFinish-like wait and its
//     wake cost) — replayed with the runtime's own decision functions (sync/wait_policy.h), then
//     submits the consumer (the consumer unit's submit cost).
//   - DRAM bandwidth is shared: a task alone moves its bytes at bytes/duration; when concurrent
//     tasks ask for more than the achievable total, it is divided max-min fairly and every task
//     slows by the share it lost (a fluid model, recomputed at every start and finish).
//   - energy: each gpu/cpu unit's and the host's active/idle power over their busy time, each npu
//     unit's own cost model per task plus its idle power, DRAM energy per byte moved by the units
//     other than npus and by the host.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "runtime/sync/sync_mode.h"
#include "runtime/sync/latency_predictor.h"
#include "runtime/sync/wait_policy.h"
#include "runtime/task_graph.h"
#include "runtime/trace/chrome_trace.h"
#include "sim/soc_model.h"
#include "sim/task_cost.h"

namespace tandem::sim {

struct SimStats {
  uint64_t tasks = 0;
  double dram_bytes = 0;
  std::map<std::string, double> busy_seconds;  // per unit, by name ("gpu", "npu", "host", ...)
  double npu_energy_j = 0;  // the npu units' own cost models, summed
  double host_active_seconds = 0;  // polling, submitting, copying
  double handoff_seconds = 0;      // producer finished -> consumer submitted, summed over handoffs
  uint64_t handoffs = 0, fast_fallbacks = 0;
  double baseline_copy_seconds = 0, baseline_finish_seconds = 0;  // the copy-and-finish baseline's extra costs
  uint64_t frames = 0, frames_kept = 0;  // the periodic load's frames that arrived, and ended in time
  double frame_busy_seconds = 0;
  double runtime_prepare_seconds = 0;  // NPU graph builds charged during runs (online-prepare)
};

// A periodic load beside the model on one unit: a game rendering on the GPU (HeteroInfer's run
// beside a game). A frame of `busy_s` of the unit's time arrives every `period_s` (the display's
// vsync) and moves `bytes` through DRAM. Kernels are not preempted: a frame waits for the kernel
// running on its unit, then goes before every kernel that became ready after it arrived. A frame is
// kept when it ends within one period of arriving (before the next vsync); otherwise the display
// shows the previous one again.
//
// Two ways a driver can order a frame against the model's queue on the unit:
//  - interleaved (default): the frame goes before every kernel that became ready after it arrived,
//    as a driver that time-slices between apps at kernel boundaries;
//  - after_submitted: the frame waits until the unit has run every kernel the model has already
//    submitted. The host submits a kernel once its inputs from other units are there (the queue
//    runs ahead over kernels of its own unit), so GPU-only work is one long run the frame cannot
//    enter, while a heterogeneous plan leaves gaps where the GPU waits on the NPU.
struct PeriodicLoad {
  std::string unit;  // a unit of the SoC, by name
  double period_s = 0, busy_s = 0, bytes = 0;
  bool after_submitted = false;
};

class SimDriver {
 public:
  SimDriver(const SocModel& soc, SyncMode sync);

  // The baseline of HeteroInfer's fast-sync ablation as the paper describes mobile frameworks
  // (SEEDS GPU-2): the host waits for every gpu/cpu kernel with a blocking clFinish before it
  // submits the next (the unit idles for the wait and the submit), and every tensor that crosses
  // from one unit to another goes device -> host -> device by memcpy (no shared pool). Off: the
  // queues run ahead and the pool is shared, so only the handoff protocol (sync) differs.
  void set_copy_and_finish_baseline(bool on) { copy_and_finish_ = on; }
  // Frames arrive from virtual time 0 on; run() refuses a unit the SoC does not have, a period
  // or busy time that is not positive, or a frame longer than its period.
  void set_periodic_load(const PeriodicLoad& load) { load_ = load; }

  // Runs the graph from the current virtual time (when the previous graph ended).
  Status run(const TaskGraph& g);
  // A unit builds a graph at run time (online-prepare): the unit that runs `device` is busy for
  // `seconds` from now.
  Status charge_prepare(const std::string& device, double seconds, const std::string& what);
  // A named span on the phase track of the trace (prefill, decode) from `start_s` to now.
  void mark_phase(const std::string& name, double start_s);

  double now() const { return now_; }
  const SimStats& stats() const { return stats_; }
  double energy_joules() const;  // every unit, [0, now]
  Status write_trace(const std::string& path) const;
  const SocModel& soc() const { return soc_; }
  TaskCostModel& costs() { return costs_; }

 private:
  // Queues: 0..units-1 the SoC's compute units (in its order), then the host.
  struct Running {
    int task;
    size_t unit;
    double start, remaining, alone, demand;  // remaining: fraction of the work left
  };
  Result<size_t> queue_of(const std::string& device) const;
  const ComputeUnit* unit_at(size_t q) const { return q < host_ ? &soc_.units[q] : nullptr; }
  double handoff_delay(const Task& producer, size_t producer_unit, double start, double end, size_t consumer_unit);
  std::vector<double> bandwidth_factors(const std::vector<Running>& running) const;
  void record(size_t unit, const std::string& name, double start, double end, const char* category);

  const SocModel& soc_;
  SyncMode sync_;
  bool copy_and_finish_ = false;
  PeriodicLoad load_;
  double next_frame_at_ = 0;             // the next frame's arrival
  std::deque<int> frames_waiting_;       // arrived, not started (frame serials)
  std::map<int, double> frame_arrival_;  // by serial, until the frame ends
  std::vector<Running> carry_;           // frames still running when a graph ended
  TaskCostModel costs_;
  sync::LatencyPredictor predictor_{1.0};
  sync::FastWaitParams fast_params_;
  double now_ = 0;
  double dram_energy_bytes_ = 0;  // DRAM traffic whose energy no npu's own model counts
  size_t host_ = 0;                   // the host's queue
  std::vector<std::string> names_;    // per queue
  std::vector<double> unit_free_at_;  // per queue
  std::vector<double> model_energy_;  // per queue: the npu units' own cost models
  SimStats stats_;
  trace::VirtualClock clock_;
  trace::TraceRecorder trace_{&clock_, "tandem SimDriver"};
  std::map<std::string, trace::TrackId> tracks_;
};

}  // namespace tandem::sim
