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
// Order (NPU-2):
//   kNaive     [n,in] x [in,out]: the array holds a weight tile; it is reused only for the n/T
//              activation tiles, so short sequences swap the held operand nearly every op.
//   kExchanged [out,in] x [in,n] = Y^T: the array holds an activation tile and the weight tiles
//              stream through it (reuse over the R out-tiles of a slab). The transposes are free
//              here (B loaded column-wise, C written through the transposing port — see MmaArgs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "npu/program.h"
#include "npu/target_model.h"

namespace tandem::npu::oplib {

enum class MatmulOrder { kNaive, kExchanged };

struct MatmulSpec {
  uint32_t n = 1, in = 0, out = 0;
  DType wtype = DType::F16;  // F16, Q8_0 or Q4_0
  MatmulOrder order = MatmulOrder::kExchanged;
  bool double_buffer = true;
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
  uint64_t tcm_used = 0;
  uint64_t steps = 0;  // weight slabs streamed in total
  std::string describe() const;
};

Result<MatmulPlan> plan_matmul(const MatmulSpec& s, const TargetModel& t);
uint64_t packed_weight_bytes(const MatmulSpec& s, const TargetModel& t);
// w: `out` rows of row_bytes(wtype, in) bytes (GGUF row layout).
Result<std::vector<uint8_t>> pack_weights(const MatmulSpec& s, const TargetModel& t, const void* w, size_t w_bytes);
Result<Program> lower_matmul(const MatmulSpec& s, const TargetModel& t);

struct PreparedMatmul {
  MatmulSpec spec;
  MatmulPlan plan;
  Program program;
  std::vector<uint8_t> weight_pack;  // bind to buffer 1
  uint64_t graph_bytes = 0;          // activation bytes the graph-build model charges (x + y)
  double prepare_seconds = 0;        // modeled graph build (TargetModel prepare.*)
};
// Lowers + packs; the modeled prepare time is the target's graph-build model on graph_bytes.
Result<PreparedMatmul> prepare_matmul(const MatmulSpec& s, const TargetModel& t, const void* w, size_t w_bytes);

}  // namespace tandem::npu::oplib
