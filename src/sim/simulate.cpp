#include "sim/simulate.h"

#include <algorithm>
#include <set>

#include "devices/npu/npu_device.h"
#include "graph/transformer_graph.h"
#include "core/memory_pool.h"

namespace tandem::sim {

Result<SimulateResult> simulate(const Model& model, const SocModel& soc, const SimulateOptions& o) {
  if (o.prompt < 1 || o.prompt > 65536) return InvalidArgument("--prompt: " + std::to_string(o.prompt) + " must be in 1..65536");
  if (o.gen < 0 || o.gen > 65536) return InvalidArgument("--gen: " + std::to_string(o.gen) + " must be in 0..65536");
  const ModelConfig& c = model.config();
  // Roles not given (partition.gpu empty): the SoC's units take them, as `tandem simulate` does.
  PartitionOptions partition = o.partition;
  if (partition.gpu.empty()) {
    TANDEM_ASSIGN_OR_RETURN(DeviceRoles roles, soc.roles());
    roles.apply_to(partition);
  }
  std::vector<int> lengths = partition.standard_lengths;
  std::sort(lengths.begin(), lengths.end());

  // The same buffers a real run lays out (addresses only), one prefill chunk for the prompt.
  MemoryPool pool;
  const int context = o.prompt + o.gen;
  graph::BufferPlan plan(pool, c, o.prompt, context, slot_rows_for(o.prompt, lengths));
  const int64_t pad_rows = lengths.empty() ? 1 : lengths.back();
  const int64_t pad_cols = std::max({c.dim, c.q_dim(), c.ffn_dim});
  const size_t pad_x = pool.reserve("npu padding in", size_t(pad_rows * pad_cols) * 4, c.n_layers);
  const size_t pad_y = pool.reserve("npu padding out", size_t(pad_rows * pad_cols) * 4, c.n_layers);
  const size_t logits = pool.reserve("logits", size_t(c.n_vocab) * 4);
  pool.allocate_address_space_only();
  const graph::Buffers b = plan.bind(pool);

  // The unit in the NPU's role, where the SoC has it (a task for a unit it lacks is the driver's
  // error, naming the device).
  const ComputeUnit* npu_unit = nullptr;
  if (!partition.npu.empty()) {
    if (auto q = soc.unit_for_device(partition.npu); q.ok()) npu_unit = &soc.units[*q];
  }
  SimDriver driver(soc, o.sync);
  driver.set_copy_and_finish_baseline(o.copy_and_finish_baseline);
  if (o.game.fps > 0) {
    const ComputeUnit* gpu = soc.of_kind(devices::DeviceKind::kGpu);
    if (!gpu) return InvalidArgument("simulate: a game runs on a gpu unit; " + soc.file + " has none (" + soc.unit_names() + ")");
    if (!(o.game.gpu_occupancy > 0 && o.game.gpu_occupancy <= 1)) {
      return InvalidArgument("simulate: the game's GPU occupancy " + std::to_string(o.game.gpu_occupancy) + " must be in (0, 1]");
    }
    const double period = 1.0 / o.game.fps;
    driver.set_periodic_load({gpu->name, period, period * o.game.gpu_occupancy, o.game.dram_bytes_per_s * period, o.game.after_submitted});
  }
  driver.costs().set_npu_order(o.npu_order);
  if (o.npu_cache) driver.costs().set_compile_cache(o.npu_cache);
  SimulateResult r;
  // NPU graphs: standard lengths (and the decode graph) are built offline, before the request;
  // any other length at run time, charged to the NPU before the chunk that needs it.
  std::set<std::string> graphs;
  std::vector<std::pair<std::string, double>> build_now;
  auto npu_can_run = [&](const graph::GraphSpec& s) {
    // A fused norm + projections: only a compiled program (the NPU's library has none).
    if (s.kind == graph::OpKind::kNormLinear && (!o.npu_cache || !devices::NpuDevice::cached_program(*o.npu_cache, s))) return false;
    const bool row_op = s.kind == graph::OpKind::kRmsNorm || s.kind == graph::OpKind::kSwiglu || s.kind == graph::OpKind::kAdd ||
                        s.kind == graph::OpKind::kNormLinear;
    if (row_op ? !partition.npu_row_ops
               : s.kind != graph::OpKind::kMatmul || !s.weight || !devices::NpuDevice::weight_type_supported(s.weight->type)) {
      return false;
    }
    const std::string key = s.key();
    if (graphs.count(key)) return true;
    // The graph binds its activations (fp16): x and y of a matmul, a row op's operands.
    uint64_t proj_cols = 0;  // norm_linear: every projection's output
    for (int i = 0; i < s.n_proj; ++i) proj_cols += uint64_t(s.proj[size_t(i)]->rows);
    const uint64_t bytes = s.kind == graph::OpKind::kNormLinear ? uint64_t(s.m) * (uint64_t(s.cols) + proj_cols) * 2
                           : row_op ? uint64_t(s.m) * uint64_t(s.cols) * (s.kind == graph::OpKind::kRmsNorm ? 2 : 3) * 2
                                  : uint64_t(s.m) * uint64_t(s.weight->cols + (s.row_end - s.row_begin)) * 2;
    const double cost = npu_unit && npu_unit->static_graphs() ? npu_unit->npu.target.prepare_seconds(bytes) : 0.0;
    const bool standard = s.m == 1 || std::binary_search(lengths.begin(), lengths.end(), int(s.m));
    if (standard) {
      r.offline_prepare_s += cost;
    } else {
      build_now.emplace_back(key, cost);
    }
    graphs.insert(key);
    return true;
  };
  PadScratch pad{pool.get_as<float>(pad_x), pool.get_as<float>(pad_y), pad_rows, pad_cols};
  Partitioner partitioner(partition, pad, npu_can_run);

  auto run_chunk = [&](int n, int n_past) -> Status {
    const std::vector<graph::OpCall> ops = graph::build_forward(model, b, n, n_past, pool.get_as<float>(logits), false);
    TaskGraph g;
    partitioner.lower_forward(ops, [&](const graph::OpCall& op) { return graph::is_layer_matmul(model, op); }, g);
    for (const auto& [key, seconds] : build_now) TANDEM_RETURN_IF_ERROR(driver.charge_prepare(partition.npu, seconds, key));
    build_now.clear();
    return driver.run(g);
  };

  const int chunk = o.prefill_chunk > 0 ? std::min(o.prefill_chunk, o.prompt) : o.prompt;
  for (int done = 0; done < o.prompt; done += chunk) TANDEM_RETURN_IF_ERROR(run_chunk(std::min(chunk, o.prompt - done), done));
  r.prefill_s = driver.now();
  r.prefill_energy_j = driver.energy_joules();
  driver.mark_phase("prefill " + std::to_string(o.prompt), 0.0);
  const double bytes_before_decode = driver.stats().dram_bytes;
  for (int i = 0; i < o.gen; ++i) TANDEM_RETURN_IF_ERROR(run_chunk(1, o.prompt + i));
  r.decode_s = driver.now() - r.prefill_s;
  if (o.gen > 0) driver.mark_phase("decode " + std::to_string(o.gen), r.prefill_s);

  const SimStats& st = driver.stats();
  r.prefill_tok_s = double(o.prompt) / r.prefill_s;
  r.decode_tok_s = o.gen > 0 ? double(o.gen) / r.decode_s : 0.0;
  r.decode_gb_s = o.gen > 0 ? (st.dram_bytes - bytes_before_decode) / r.decode_s / 1e9 : 0.0;
  r.energy_j = driver.energy_joules();
  r.decode_energy_j = r.energy_j - r.prefill_energy_j;
  r.runtime_prepare_s = st.runtime_prepare_seconds;
  r.npu_graphs = graphs.size();
  r.tasks = st.tasks;
  r.handoffs = st.handoffs;
  r.fast_fallbacks = st.fast_fallbacks;
  r.handoff_s = st.handoff_seconds;
  r.game_frames = st.frames;
  r.game_frames_kept = st.frames_kept;
  r.busy_s = st.busy_seconds;
  r.npu_shapes_compiled = driver.costs().npu_shapes_compiled();
  r.npu_shapes_library = driver.costs().npu_shapes_library();
  r.first_not_compiled = driver.costs().first_not_compiled();
  if (!o.trace.empty()) TANDEM_RETURN_IF_ERROR(driver.write_trace(o.trace));
  return r;
}

}  // namespace tandem::sim
