// `tandem simulate`: one request (a prompt of N tokens, then M generated tokens) of a model on a
// modeled SoC, through the same graph builder, partitioner and TaskGraph as a real run, timed by
// the SimDriver. Graphs of the standard lengths are built offline (reported, not charged); a
// graph for any other length is built at run time (online-prepare) and charged to the NPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compile_cache/cache.h"
#include "model/model.h"
#include "runtime/partition.h"
#include "runtime/sync/sync_mode.h"
#include "sim/sim_driver.h"

namespace tandem::sim {

struct SimulateOptions {
  PartitionOptions partition;  // strategy, gpu_share, standard lengths
  SyncMode sync = SyncMode::kFast;
  // The fast-sync ablation's baseline as the paper describes it: clFinish after every GPU kernel
  // and host copies of every tensor crossing units (SimDriver::set_copy_and_finish_baseline).
  bool copy_and_finish_baseline = false;
  // A game beside the model on the SoC's gpu unit (SimDriver's PeriodicLoad): `fps` frames a second,
  // each `gpu_occupancy` of a frame period of GPU time, moving dram_bytes_per_s / fps bytes. Off at 0 fps.
  // after_submitted: the driver runs the model's submitted kernels before a frame (PeriodicLoad).
  struct Game {
    double fps = 0, gpu_occupancy = 0, dram_bytes_per_s = 0;
    bool after_submitted = false;
  } game;
  // kWeightStationary: NPU matmuls without the order exchange (SEEDS NPU-2), the ablation's first step.
  npu::oplib::MatmulOrder npu_order = npu::oplib::MatmulOrder::kActivationStationary;
  int prompt = 256;
  int gen = 32;
  int prefill_chunk = 0;  // >0: the prompt is prefilled in chunks of at most this many tokens
  std::string trace;  // Chrome trace path, or empty
  // The compiler's programs: NPU shapes the cache holds are timed on them (sim/task_cost.h).
  std::shared_ptr<const compile_cache::CompileCache> npu_cache;
};

struct SimulateResult {
  double prefill_s = 0, decode_s = 0;
  double prefill_tok_s = 0, decode_tok_s = 0;
  double decode_gb_s = 0;     // DRAM bytes moved per second of decode
  double energy_j = 0;        // the whole request
  double prefill_energy_j = 0, decode_energy_j = 0;
  double offline_prepare_s = 0;  // NPU graphs of standard lengths, built before the request
  double runtime_prepare_s = 0;  // graphs built during it (charged)
  uint64_t npu_graphs = 0, tasks = 0, handoffs = 0, fast_fallbacks = 0;
  double handoff_s = 0;
  uint64_t game_frames = 0, game_frames_kept = 0;  // with a game: frames that arrived during the request, and ended in time
  std::map<std::string, double> busy_s;
  // With a compile cache: distinct NPU shapes timed on its programs and on the operator
  // library's (the cache had none), and the first of those with why.
  uint64_t npu_shapes_compiled = 0, npu_shapes_library = 0;
  std::string first_not_compiled;
};

Result<SimulateResult> simulate(const Model& model, const SocModel& soc, const SimulateOptions& options);

}  // namespace tandem::sim
