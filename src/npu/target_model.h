// TargetModel: the queryable description of one NPU (matrix arrays, TCM, DMA, vector unit, issue
// costs, graph-build cost, power). It is read from a JSON file (data/npu/*.json) in which every
// number carries its source; nothing else in tandem may hard-code a hardware number.
//
// JSON layout: every leaf is {"value": <number>, "source": "<SEEDS row id | paper section |
// assumption: reason>"}; parsing is strict (missing, wrong-typed, non-positive or unknown fields are
// errors naming the file, the field path and the offending value).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tandem::npu {

// Vector operations (the vector unit's instruction set). Numbered: the values are binary format.
enum class VecOp : uint8_t {
  kAdd = 0,        // dst = a + b                          (n fp16)
  kMul = 1,        // dst = a * b                          (n fp16)
  kScale = 2,      // dst = a * imm0                       (n fp16)
  kFill = 3,       // dst = imm0                           (n fp16)
  kSilu = 4,       // dst = a * sigmoid(a)                 (n fp16)
  kSwiglu = 5,     // dst = silu(a) * b                    (n fp16)
  kSumSq = 6,      // dst (one fp32) = sum a[i]^2          (n fp16 in, fp32 accumulate)
  kRmsApply = 7,   // dst = a * b / sqrt(c * imm0 + imm1)  (n fp16; c is one fp32 in TCM)
  kCvtF32F16 = 8,  // dst fp16 = a fp32                    (n elements)
  kCvtF16F32 = 9,  // dst fp32 = a fp16                    (n elements)
  kUnpackQ8 = 10,  // dst fp16 = Q8_0 blocks at a          (n elements = n/32 blocks of 34 B)
  kUnpackQ4 = 11,  // dst fp16 = Q4_0 blocks at a          (n elements = n/32 blocks of 18 B)
};
constexpr int kNumVecOps = 12;
std::string_view vec_op_name(VecOp op);  // "add", "unpack_q4", ... (also the JSON key)

struct TargetModel {
  std::string name;
  std::string file;  // where it was read from ("" if built in code)

  struct Matrix {
    int tile_dim = 0;                     // the array is tile_dim x tile_dim; operands are fp16
    int arrays = 0;                       // independent arrays, each an in-order queue
    double clock_hz = 0;                  // NPU clock (vector unit, DMA cycles use it too)
    double stream_rows_per_cycle = 0;     // rows of the streamed operand entering per cycle
    double stationary_load_bytes_per_cycle = 0;  // bytes/cycle to load the held operand
    double pipeline_fill_drain_cycles = 0;       // paid when the held operand is swapped
  } matrix;
  struct Tcm {
    uint64_t bytes = 0;
    uint32_t alignment_bytes = 0;
  } tcm;
  struct Dma {
    int channels = 0;
    double bandwidth_bytes_per_s = 0;  // all channels together
    double setup_cycles = 0;           // per transfer
    double row_cycles = 0;             // per 2-D row
  } dma;
  double ddr_single_processor_bytes_per_s = 0;
  struct Vector {
    int width_bits = 0;
    int units = 0;
    double startup_cycles = 0;
    double op_cycles_per_vector[kNumVecOps] = {};
  } vector;
  struct Issue {
    double dma_cycles = 0, mma_cycles = 0, vec_cycles = 0, sync_cycles = 0;
    double signal_latency_cycles = 0;
  } issue;
  struct Prepare {
    double fixed_s = 0;     // per graph
    double per_byte_s = 0;  // per byte of graph (activation) tensors
  } prepare;
  struct Power {
    double matrix_pj_per_flop = 0, vector_pj_per_lane_op = 0, dma_pj_per_byte = 0, static_w = 0;
  } power;

  // --- loading ---
  static Result<TargetModel> from_json_text(std::string_view text, std::string_view file_label);
  static Result<TargetModel> load(const std::string& path);
  static Result<TargetModel> load_default();  // data/npu/hexagon-v75.json of the source tree
  static std::string default_path();
  // Every field path the JSON must contain ("matrix.tile_dim", ...).
  static const std::vector<std::string>& required_fields();

  // Every number of the model in one string: equal fingerprints time every program the same
  // (caches of timings key on it, so an edited model never hits a stale entry).
  std::string fingerprint() const;

  // --- derived queries ---
  uint32_t tile_elems() const { return uint32_t(matrix.tile_dim) * uint32_t(matrix.tile_dim); }
  uint32_t tile_row_bytes() const { return uint32_t(matrix.tile_dim) * 2; }
  uint32_t tile_bytes() const { return tile_elems() * 2; }  // fp16 tile
  double tile_flops() const { return 2.0 * matrix.tile_dim * matrix.tile_dim * matrix.tile_dim; }
  double peak_fp16_flops() const;  // all arrays, held operand never swapped
  double dma_bytes_per_s() const;  // min(DMA bandwidth, one processor's DDR share)
  double dma_bytes_per_cycle() const { return dma_bytes_per_s() / matrix.clock_hz; }
  double dma_channel_bytes_per_cycle() const { return dma_bytes_per_cycle() / dma.channels; }
  int vector_lanes_fp16() const { return vector.width_bits / 16; }
  int vector_lanes_per_cycle() const { return vector_lanes_fp16() * vector.units; }
  double seconds(double cycles) const { return cycles / matrix.clock_hz; }
  double prepare_seconds(uint64_t graph_bytes) const {
    return prepare.fixed_s + prepare.per_byte_s * double(graph_bytes);
  }
};

}  // namespace tandem::npu
