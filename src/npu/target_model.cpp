#include "npu/target_model.h"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/sourced_json.h"

namespace tandem::npu {

namespace {

using nlohmann::json;

constexpr std::string_view kVecOpNames[kNumVecOps] = {
    "add", "mul", "scale", "fill", "silu", "swiglu", "sumsq", "rmsapply",
    "cvt_f32_f16", "cvt_f16_f32", "unpack_q8", "unpack_q4"};

Result<TargetModel> parse(const json& root, const std::string& file) {
  if (!root.is_object()) return InvalidArgument(file + ": top level must be a JSON object");
  SourcedJsonReader r(root, file);
  TargetModel t;
  t.file = file;
  t.name = r.string("name");
  auto& m = t.matrix;
  m.tile_dim = int(r.integer("matrix.tile_dim", 1, 256));
  m.arrays = int(r.integer("matrix.arrays", 1, 1024));
  m.clock_hz = r.number("matrix.clock_hz", false);
  m.stream_rows_per_cycle = r.number("matrix.stream_rows_per_cycle", false);
  m.stationary_load_bytes_per_cycle = r.number("matrix.stationary_load_bytes_per_cycle", false);
  m.pipeline_fill_drain_cycles = r.number("matrix.pipeline_fill_drain_cycles", false);
  t.tcm.bytes = uint64_t(r.integer("tcm.bytes", 1, int64_t(1) << 31));
  t.tcm.alignment_bytes = uint32_t(r.integer("tcm.alignment_bytes", 1, 1 << 20));
  t.dma.channels = int(r.integer("dma.channels", 1, 256));
  t.dma.bandwidth_bytes_per_s = r.number("dma.bandwidth_bytes_per_s", false);
  t.dma.setup_cycles = r.number("dma.setup_cycles", false);
  t.dma.row_cycles = r.number("dma.row_cycles", false);
  t.ddr_single_processor_bytes_per_s = r.number("ddr.single_processor_bytes_per_s", false);
  t.vector.width_bits = int(r.integer("vector.width_bits", 16, 1 << 16));
  t.vector.units = int(r.integer("vector.units", 1, 1024));
  t.vector.startup_cycles = r.number("vector.startup_cycles", false);
  for (int i = 0; i < kNumVecOps; ++i)
    t.vector.op_cycles_per_vector[i] = r.number("vector.op_cycles_per_vector." + std::string(kVecOpNames[i]), false);
  t.issue.dma_cycles = r.number("issue.dma_cycles", false);
  t.issue.mma_cycles = r.number("issue.mma_cycles", false);
  t.issue.vec_cycles = r.number("issue.vec_cycles", false);
  t.issue.sync_cycles = r.number("issue.sync_cycles", false);
  t.issue.signal_latency_cycles = r.number("issue.signal_latency_cycles", false);
  t.prepare.fixed_s = r.number("prepare.fixed_s", false);
  t.prepare.per_byte_s = r.number("prepare.per_byte_s", false);
  t.power.matrix_pj_per_flop = r.number("power.matrix_pj_per_flop", false);
  t.power.vector_pj_per_lane_op = r.number("power.vector_pj_per_lane_op", false);
  t.power.dma_pj_per_byte = r.number("power.dma_pj_per_byte", false);
  t.power.static_w = r.number("power.static_w", false);
  r.check_unknown();
  if (!r.status().ok()) return r.status();

  // Cross-field consistency.
  if (t.vector.width_bits % 16 != 0)
    return InvalidArgument(file + ": field 'vector.width_bits' must be a multiple of 16, got " + std::to_string(t.vector.width_bits));
  const uint32_t a = t.tcm.alignment_bytes;
  if ((a & (a - 1)) != 0 || t.tile_row_bytes() % a != 0)
    return InvalidArgument(file + ": field 'tcm.alignment_bytes' must be a power of two dividing the tile row (" +
                           std::to_string(t.tile_row_bytes()) + " B), got " + std::to_string(a));
  if (t.tcm.bytes % a != 0 || t.tcm.bytes > (uint64_t(1) << 31) || t.tcm.bytes < 4ull * t.tile_bytes())
    return InvalidArgument(file + ": field 'tcm.bytes' must be a multiple of the alignment, >= 4 tiles and <= 2 GiB, got " +
                           std::to_string(t.tcm.bytes));
  return t;
}

}  // namespace

std::string_view vec_op_name(VecOp op) {
  const int i = int(op);
  return i >= 0 && i < kNumVecOps ? kVecOpNames[i] : std::string_view("?");
}

const std::vector<std::string>& TargetModel::required_fields() {
  static const std::vector<std::string> fields = [] {
    // Must list exactly what parse() asks for, in order (the tests check each one).
    std::vector<std::string> f = {
        "matrix.tile_dim", "matrix.arrays", "matrix.clock_hz", "matrix.stream_rows_per_cycle",
        "matrix.stationary_load_bytes_per_cycle", "matrix.pipeline_fill_drain_cycles", "tcm.bytes",
        "tcm.alignment_bytes", "dma.channels", "dma.bandwidth_bytes_per_s", "dma.setup_cycles", "dma.row_cycles",
        "ddr.single_processor_bytes_per_s", "vector.width_bits", "vector.units", "vector.startup_cycles"};
    for (auto n : kVecOpNames) f.push_back("vector.op_cycles_per_vector." + std::string(n));
    for (const char* s : {"issue.dma_cycles", "issue.mma_cycles", "issue.vec_cycles", "issue.sync_cycles",
                          "issue.signal_latency_cycles", "prepare.fixed_s", "prepare.per_byte_s",
                          "power.matrix_pj_per_flop", "power.vector_pj_per_lane_op", "power.dma_pj_per_byte",
                          "power.static_w"})
      f.push_back(s);
    return f;
  }();
  return fields;
}

Result<TargetModel> TargetModel::from_json_text(std::string_view text, std::string_view file_label) {
  const std::string file(file_label);
  TANDEM_ASSIGN_OR_RETURN(json root, parse_json_text(text, file));
  try {
    return parse(root, file);
  } catch (const std::exception& e) {  // nlohmann type errors should not happen (checked), but never escape
    return InvalidArgument(file + ": " + e.what());
  }
}

Result<TargetModel> TargetModel::load(const std::string& path) {
  TANDEM_ASSIGN_OR_RETURN(std::string text, read_text_file(path, "NPU target description"));
  return from_json_text(text, path);
}

std::string TargetModel::default_path() {
#ifdef TANDEM_NPU_DATA_DIR
  return std::string(TANDEM_NPU_DATA_DIR) + "/hexagon-v75.json";
#else
  return "data/npu/hexagon-v75.json";
#endif
}

Result<TargetModel> TargetModel::load_default() { return load(default_path()); }

double TargetModel::peak_fp16_flops() const {
  // One tile op (2 x T^3 FLOP) streams T rows at stream_rows_per_cycle.
  const double cycles_per_tile = matrix.tile_dim / matrix.stream_rows_per_cycle;
  return matrix.arrays * tile_flops() / cycles_per_tile * matrix.clock_hz;
}

double TargetModel::dma_bytes_per_s() const {
  return std::min(dma.bandwidth_bytes_per_s, ddr_single_processor_bytes_per_s);
}

std::string TargetModel::fingerprint() const {
  std::string f = name;
  auto add = [&](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "|%.17g", v);
    f += buf;
  };
  for (double v : {double(matrix.tile_dim), double(matrix.arrays), matrix.clock_hz, matrix.stream_rows_per_cycle,
                   matrix.stationary_load_bytes_per_cycle, matrix.pipeline_fill_drain_cycles, double(tcm.bytes),
                   double(tcm.alignment_bytes), double(dma.channels), dma.bandwidth_bytes_per_s, dma.setup_cycles,
                   dma.row_cycles, ddr_single_processor_bytes_per_s, double(vector.width_bits), double(vector.units),
                   vector.startup_cycles, issue.dma_cycles, issue.mma_cycles, issue.vec_cycles, issue.sync_cycles,
                   issue.signal_latency_cycles, prepare.fixed_s, prepare.per_byte_s, power.matrix_pj_per_flop,
                   power.vector_pj_per_lane_op, power.dma_pj_per_byte, power.static_w})
    add(v);
  for (double v : vector.op_cycles_per_vector) add(v);
  return f;
}

}  // namespace tandem::npu
