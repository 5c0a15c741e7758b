// Operator library: matmul at one static shape, lowered to an npu::Program.
//
//   Y[n, out] = X[n, in] . W[out, in]^T      X, Y fp16 row-major; W in f16, q8_0 or q4_0 rows
//                                            (GGUF layout, core/quant.h). W4A16: weight blocks are
//                                            DMA'd as-is and unpacked to fp16 on the vector unit.
//
// Program buffers: 0 "x" [n, in] fp16 (ro), 1 "w" the weight pack (ro), 2 "y" [n, out] fp16 (rw).
//
// Weight pack (built once at prepare time): every dim padded to a multiple of the tile T (zeros);
// tiles in order (out-tile j, in-tile k), each T rows of one in-tile: T x T fp16 (2 KiB) for f16,
// T blocks of one row each for q8_0/q4_0 (unpacking a tile's blocks in order yields the row-major
// fp16 tile).
//
// Schedule: X rows of an n-block stay resident in TCM (n-block sized so X fits in half the TCM;
// a long `in` gives smaller n-blocks and streams the weights once per block — the NPU-3 penalty);
// the weights stream as slabs of R out-tiles x kc in-tiles, double-buffered (prefetch slab s+1
// while slab s computes, W4A16: unpack slab s on the vector unit while the arrays work); an output
// panel [n-block, R x T] accumulates in TCM over the in-dim and is written back while the next
// panel computes.
// Order (NPU-2; one vocabulary with the compiler's `dataflow` and the compile cache's `order`):
//   weight_stationary      [n,in] x [in,out], the naive order: the array holds a weight tile; it is
//                          reused only for the n/T activation tiles, so short sequences swap the
//                          held operand nearly every op.
//   activation_stationary  [out,in] x [in,n] = Y^T, the paper's order exchange: the array holds an
//                          activation tile and the weight tiles stream through it (reuse over the R
//                          out-tiles of a slab). The transposes are free here (B loaded column-wise,
//                          C written through the transposing port — see MmaArgs).
#pragma once

#include <optional>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu::oplib {

enum class MatmulOrder { kWeightStationary, kActivationStationary };
// "weight_stationary" / "activation_stationary": the names the compiler's IR and the compile
// cache's manifest use.
const char* matmul_order_name(MatmulOrder o);
Result<MatmulOrder> matmul_order_from_name(const std::string& name);

struct MatmulSpec {
  uint32_t n = 1, in = 0, out = 0;
  DType wtype = DType::F16;  // F16, Q8_0 or Q4_0
  MatmulOrder order = MatmulOrder::kActivationStationary;
  bool double_buffer = true;      // weight (and unpack) slabs: two buffers, prefetch overlaps compute
  bool double_buffer_out = true;  // output panels: two buffers, write-back overlaps the next panel
  uint32_t arrays = 0;            // matrix arrays the schedule spreads over (0 = all of the target's;
                                  // fewer = lower peak power, the compiler's power levels)
};

struct MatmulPlan {
  uint32_t T = 0;
  uint32_t n_pad = 0, in_pad = 0, out_pad = 0;  // padded to multiples of T
  uint32_t NT = 0, KT = 0, OT = 0;              // tile counts
  uint32_t nb = 0;                              // rows per n-block (multiple of T)
  uint32_t R = 0;                               // out-tiles per panel / slab
  uint32_t kc = 0;                              // in-tiles per slab
  uint32_t wtile_bytes = 0;                     // bytes of one packed weight tile
  uint32_t x_addr = 0, x_pitch = 0, y_addr[2] = {}, w_addr[2] = {}, u_addr[2] = {};
  uint32_t g_addr = 0, s_addr = 0;  // norm_linear.h only: the prologue's gain row and scalar slot
  uint64_t tcm_used = 0;
  uint64_t steps = 0;  // weight slabs streamed in total
  std::string describe() const;
};

// The library's blocking heuristic (X n-block in half the TCM, ~256 KiB weight slabs) with the
// buffers packed from TCM address 0.
Result<MatmulPlan> plan_matmul(const MatmulSpec& s, const TargetModel& t);
// A plan for a blocking chosen elsewhere (the compiler's tiling search): nb rows per n-block
// (multiple of T), R out-tiles and kc in-tiles per slab; buffers packed from address 0 (a TCM
// allocator may move them: emit_matmul reads only the plan's addresses). Fails when the spec is
// invalid or the blocking is out of range; does not check the TCM capacity (see tcm_used).
Result<MatmulPlan> block_matmul(const MatmulSpec& s, const TargetModel& t, uint32_t nb, uint32_t R, uint32_t kc);
// Bytes of each TCM buffer of a plan (x once; y, w, u per buffer; u = 0 for f16 weights).
struct MatmulBufferBytes {
  uint64_t x = 0, y = 0, w = 0, u = 0;
};
MatmulBufferBytes matmul_buffer_bytes(const MatmulSpec& s, const MatmulPlan& p);
// The steady-state cycle estimate of a plan on the shared cost model (CostModel::pipelined_cycles
// over the slabs: d = slab DMA, c = unpack + tile ops spread over the arrays, w = panel store).
double estimate_matmul_cycles(const MatmulSpec& s, const MatmulPlan& p, const TargetModel& t);
// The plan's average power over its estimated run (CostModel::energy_joules: matrix FLOPs of the
// padded tiles, vector lane ops of the unpacks, DMA bytes, static power) divided by its time.
double estimate_matmul_power_w(const MatmulSpec& s, const MatmulPlan& p, const TargetModel& t);
// Matrix arrays a spec's schedule uses on t.
uint32_t matmul_arrays(const MatmulSpec& s, const TargetModel& t);
uint64_t packed_weight_bytes(const MatmulSpec& s, const TargetModel& t);
// w: `out` rows of row_bytes(wtype, in) bytes (GGUF row layout).
Result<std::vector<uint8_t>> pack_weights(const MatmulSpec& s, const TargetModel& t, const void* w, size_t w_bytes);
Result<Program> lower_matmul(const MatmulSpec& s, const TargetModel& t);  // plan_matmul + emit_matmul
// The instruction stream of a plan (addresses as the plan says; the program's verify() checks them).
Result<Program> emit_matmul(const MatmulSpec& s, const MatmulPlan& p, const TargetModel& t);

struct PreparedMatmul {
  MatmulSpec spec;
  MatmulPlan plan;
  Program program;
  std::vector<uint8_t> weight_pack;  // bind to buffer 1
  uint64_t graph_bytes = 0;          // activation bytes the graph-build model charges (x + y)
  double prepare_seconds = 0;        // modeled graph build (TargetModel prepare.*)
};
// Lowers + packs; the modeled prepare time is the target's graph-build model on graph_bytes.
// `source`: how the rows at w are stored when it differs from s.wtype (pack_weights_from converts).
Result<PreparedMatmul> prepare_matmul(const MatmulSpec& s, const TargetModel& t, const void* w, size_t w_bytes,
                                      std::optional<DType> source = std::nullopt);

}  // namespace tandem::npu::oplib

namespace tandem::npu::oplib {

// Packs GGUF rows stored as `source` for a spec whose pack format may differ: the same format
// packs as-is; a quantized source for an f16 pack is dequantized row by row first (the compiler's
// "f16_tiles" layout), an f32 or bf16 one rounded to f16. Other conversions are Unsupported.
Result<std::vector<uint8_t>> pack_weights_from(const MatmulSpec& s, const TargetModel& t, DType source, const void* w,
                                               size_t w_bytes);

}  // namespace tandem::npu::oplib
