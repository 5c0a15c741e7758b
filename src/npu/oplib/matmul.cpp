#include "npu/oplib/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/half.h"
#include "core/quant.h"
#include "npu/cost_model.h"
#include "npu/oplib/matmul_stream.h"
#include "npu/oplib/round_up.h"

namespace tandem::npu::oplib {

namespace {

uint32_t tile_bytes_for(DType w, uint32_t T) {
  if (w == DType::Q8_0) return T * uint32_t(sizeof(BlockQ8_0)) * (T / kQK);
  if (w == DType::Q4_0) return T * uint32_t(sizeof(BlockQ4_0)) * (T / kQK);
  return T * T * 2;
}

}  // namespace

const char* matmul_order_name(MatmulOrder o) {
  return o == MatmulOrder::kWeightStationary ? "weight_stationary" : "activation_stationary";
}

Result<MatmulOrder> matmul_order_from_name(const std::string& name) {
  if (name == "weight_stationary") return MatmulOrder::kWeightStationary;
  if (name == "activation_stationary") return MatmulOrder::kActivationStationary;
  return InvalidArgument("matmul order '" + name + "' is not weight_stationary or activation_stationary");
}

Status check_matmul_spec(const MatmulSpec& s) {
  if (s.n == 0 || s.in == 0 || s.out == 0) return InvalidArgument("matmul: n, in and out must be >= 1");
  if (s.wtype != DType::F16 && s.wtype != DType::Q8_0 && s.wtype != DType::Q4_0)
    return Unsupported("matmul: weight type " + std::string(dtype_name(s.wtype)) + " (supported: f16, q8_0, q4_0)");
  if (s.wtype != DType::F16 && s.in % kQK != 0)
    return InvalidArgument("matmul: in=" + std::to_string(s.in) + " must be a multiple of " + std::to_string(kQK) + " for " +
                           std::string(dtype_name(s.wtype)));
  if (uint64_t(s.n) * s.in > (1ull << 31) || uint64_t(s.n) * s.out > (1ull << 31) || uint64_t(s.out) * s.in > (1ull << 34))
    return InvalidArgument("matmul: shape too large");
  return Status::Ok();
}

Status check_matmul_plan(const MatmulPlan& p, const TargetModel& t) {
  if (p.T != uint32_t(t.matrix.tile_dim) || p.nb == 0 || p.R == 0 || p.kc == 0)
    return InvalidArgument("matmul emit: plan does not match the target / is incomplete");
  return Status::Ok();
}

double x_load_cycles(const MatmulPlan& p, const TargetModel& t) {
  const double channels = t.dma.channels;
  const uint64_t nblocks = (p.n_pad + p.nb - 1) / p.nb;
  return double(nblocks) * CostModel(t).dma_cycles((p.nb + channels - 1) / channels, p.x_pitch);
}

std::string MatmulPlan::describe() const {
  std::ostringstream o;
  o << "tiles " << NT << "x" << KT << "x" << OT << " (n x in x out, T=" << T << "), n-block " << nb << " rows, slab "
    << R << " out-tiles x " << kc << " in-tiles (" << wtile_bytes << " B/tile), " << steps << " slabs, TCM " << tcm_used
    << " B";
  return o.str();
}

uint64_t packed_weight_bytes(const MatmulSpec& s, const TargetModel& t) {
  const uint32_t T = uint32_t(t.matrix.tile_dim);
  return uint64_t(round_up_u32(s.out, T) / T) * (round_up_u32(s.in, T) / T) * tile_bytes_for(s.wtype, T);
}

Result<MatmulPlan> block_matmul(const MatmulSpec& s, const TargetModel& t, uint32_t nb, uint32_t R, uint32_t kc) {
  TANDEM_RETURN_IF_ERROR(check_matmul_spec(s));
  MatmulPlan p;
  const uint32_t T = p.T = uint32_t(t.matrix.tile_dim);
  if (s.wtype != DType::F16 && T % kQK != 0) return Unsupported("matmul: tile size must be a multiple of the quant block");
  p.n_pad = round_up_u32(s.n, T);
  p.in_pad = round_up_u32(s.in, T);
  p.out_pad = round_up_u32(s.out, T);
  p.NT = p.n_pad / T;
  p.KT = p.in_pad / T;
  p.OT = p.out_pad / T;
  p.wtile_bytes = tile_bytes_for(s.wtype, T);
  p.x_pitch = p.in_pad * 2;
  if (nb == 0 || nb % T != 0 || nb > p.n_pad || R == 0 || R > p.OT || kc == 0 || kc > p.KT)
    return InvalidArgument("matmul: blocking nb=" + std::to_string(nb) + " R=" + std::to_string(R) + " kc=" +
                           std::to_string(kc) + " out of range for tiles " + std::to_string(p.NT) + "x" +
                           std::to_string(p.KT) + "x" + std::to_string(p.OT));
  p.nb = nb;
  p.R = R;
  p.kc = kc;
  const MatmulBufferBytes b = matmul_buffer_bytes(s, p);
  const uint64_t align = t.tcm.alignment_bytes;
  uint64_t addr = 0;
  auto alloc = [&](uint64_t bytes) { const uint32_t a = uint32_t(addr); addr = round_up_u32(addr + bytes, align); return a; };
  p.x_addr = alloc(b.x);
  for (int i = 0; i < (s.double_buffer_out ? 2 : 1); ++i) p.y_addr[i] = alloc(b.y);
  for (int i = 0; i < (s.double_buffer ? 2 : 1); ++i) p.w_addr[i] = alloc(b.w);
  for (int i = 0; i < (s.double_buffer ? 2 : 1) && b.u > 0; ++i) p.u_addr[i] = alloc(b.u);
  p.tcm_used = addr;
  const uint64_t nblocks = (p.n_pad + p.nb - 1) / p.nb;
  p.steps = nblocks * ((p.OT + R - 1) / R) * ((p.KT + kc - 1) / kc);
  return p;
}

MatmulBufferBytes matmul_buffer_bytes(const MatmulSpec& s, const MatmulPlan& p) {
  MatmulBufferBytes b;
  b.x = uint64_t(p.nb) * p.x_pitch;
  b.y = uint64_t(p.nb) * p.R * p.T * 2;
  b.w = uint64_t(p.R) * p.kc * p.wtile_bytes;
  b.u = s.wtype != DType::F16 ? uint64_t(p.R) * p.kc * p.T * p.T * 2 : 0;
  return b;
}

Result<MatmulPlan> plan_matmul(const MatmulSpec& s, const TargetModel& t) {
  TANDEM_RETURN_IF_ERROR(check_matmul_spec(s));
  const uint32_t T = uint32_t(t.matrix.tile_dim);
  const uint64_t tcm = t.tcm.bytes;
  const uint64_t x_pitch = uint64_t(round_up_u32(s.in, T)) * 2;
  // X resident: an n-block of rows must fit in half the TCM.
  const uint64_t x_rows_fit = (tcm / 2) / x_pitch / T * T;
  if (x_rows_fit < T)
    return Unsupported("matmul: in=" + std::to_string(s.in) + " too large: " + std::to_string(T) + " rows of X (" +
                       std::to_string(uint64_t(T) * x_pitch) + " B) exceed half the TCM");
  const uint32_t nb = uint32_t(std::min<uint64_t>(round_up_u32(s.n, T), x_rows_fit));
  const uint32_t OT = round_up_u32(s.out, T) / T, KT = round_up_u32(s.in, T) / T;
  const uint64_t wtile = tile_bytes_for(s.wtype, T);
  const uint64_t slab_target = 256 * 1024;  // raw bytes per slab: amortizes DMA setup, short prologue
  // Sized as if every buffer were doubled, so single-buffered variants keep the same blocking.
  MatmulSpec doubled = s;
  doubled.double_buffer = doubled.double_buffer_out = true;
  auto total = [&](uint32_t R, uint32_t kc) {
    auto p = block_matmul(doubled, t, nb, R, kc);
    return p.ok() ? p->tcm_used : UINT64_MAX;
  };
  uint32_t R = std::min<uint32_t>(OT, 32);
  uint32_t kc = uint32_t(std::clamp<uint64_t>(slab_target / (uint64_t(R) * wtile), 1, KT));
  while (total(R, kc) > tcm && kc > 1) kc = std::max<uint32_t>(1, kc / 2);
  while (total(R, kc) > tcm && R > 1) R = std::max<uint32_t>(1, R / 2);
  if (total(R, kc) > tcm) return Unsupported("matmul: does not fit the TCM even with 1x1-tile slabs");
  return block_matmul(s, t, nb, R, kc);
}

double estimate_matmul_cycles(const MatmulSpec& s, const MatmulPlan& p, const TargetModel& t) {
  const CostModel cost(t);
  const uint32_t T = p.T;
  const uint64_t nblocks = (p.n_pad + p.nb - 1) / p.nb;
  const uint64_t panels_per_block = (p.OT + p.R - 1) / p.R;
  const uint64_t slabs_per_panel = (p.KT + p.kc - 1) / p.kc;
  const double channels = t.dma.channels;
  // Per slab: R rows of kc tiles split over the channels (they run concurrently).
  const double d = cost.dma_cycles((p.R + channels - 1) / channels, uint64_t(p.kc) * p.wtile_bytes);
  const uint64_t ntiles = p.nb / T;
  const uint64_t ops = uint64_t(p.R) * p.kc * ntiles;
  // Held-operand swaps: exchanged holds an X tile over the slab's R weight tiles; naive holds a
  // weight tile over the n-block's X tiles.
  const uint64_t swaps = s.order == MatmulOrder::kActivationStationary ? uint64_t(p.kc) * ntiles : uint64_t(p.kc) * p.R;
  const uint64_t lanes = std::min<uint64_t>(matmul_arrays(s, t),
                                            s.order == MatmulOrder::kActivationStationary ? std::max<uint64_t>(ntiles, p.R) : p.R);
  double c = (double(ops) * cost.tile_stream_cycles() + double(swaps) * cost.stationary_swap_cycles()) / double(lanes) +
             double(ops) * cost.issue_cycles(Opcode::kMma);
  if (s.wtype != DType::F16)
    c += cost.vector_cycles(s.wtype == DType::Q8_0 ? VecOp::kUnpackQ8 : VecOp::kUnpackQ4, uint64_t(p.R) * p.kc * T * T);
  // The panel store is paid once per panel. Two output buffers: it overlaps the next panel (spread
  // over the panel's slabs inside the pipeline). One: the next panel waits for it.
  const double store = cost.dma_cycles((p.nb + channels - 1) / channels, uint64_t(p.R) * T * 2);
  const uint64_t panels = nblocks * panels_per_block;
  const uint64_t steps = panels * slabs_per_panel;
  const double x_load = x_load_cycles(p, t);
  if (!s.double_buffer_out) return x_load + double(panels) * store + CostModel::pipelined_cycles(d, c, 0, steps, s.double_buffer);
  return x_load + CostModel::pipelined_cycles(d, c, store / double(slabs_per_panel), steps, s.double_buffer);
}

Result<std::vector<uint8_t>> pack_weights(const MatmulSpec& s, const TargetModel& t, const void* w, size_t w_bytes) {
  TANDEM_ASSIGN_OR_RETURN(MatmulPlan p, plan_matmul(s, t));
  const size_t rb = row_bytes(s.wtype, s.in);
  if (w == nullptr || w_bytes < rb * s.out)
    return InvalidArgument("matmul pack: weight needs " + std::to_string(rb * s.out) + " B, got " + std::to_string(w_bytes));
  const uint8_t* src = static_cast<const uint8_t*>(w);
  std::vector<uint8_t> pack(packed_weight_bytes(s, t), 0);  // zero = zero fp16 / zero-scale blocks
  const uint32_t T = p.T;
  const uint32_t tile_row = p.wtile_bytes / T;  // bytes of one row of one tile
  for (uint32_t j = 0; j < p.OT; ++j)
    for (uint32_t k = 0; k < p.KT; ++k) {
      uint8_t* tile = pack.data() + (uint64_t(j) * p.KT + k) * p.wtile_bytes;
      for (uint32_t r = 0; r < T; ++r) {
        const uint32_t row = j * T + r;
        if (row >= s.out) break;
        const uint8_t* srow = src + uint64_t(row) * rb;
        if (s.wtype == DType::F16) {
          const uint32_t c0 = k * T, cols = std::min(T, s.in - c0);
          std::memcpy(tile + r * tile_row, srow + uint64_t(c0) * 2, cols * 2);
        } else {
          std::memcpy(tile + r * tile_row, srow + uint64_t(k) * tile_row, tile_row);  // T/kQK blocks
        }
      }
    }
  return pack;
}

Result<Program> lower_matmul(const MatmulSpec& s, const TargetModel& t) {
  TANDEM_ASSIGN_OR_RETURN(MatmulPlan p, plan_matmul(s, t));
  return emit_matmul(s, p, t);
}

Result<Program> emit_matmul(const MatmulSpec& s, const MatmulPlan& p, const TargetModel& t) {
  TANDEM_RETURN_IF_ERROR(check_matmul_spec(s));
  TANDEM_RETURN_IF_ERROR(check_matmul_plan(p, t));
  Program prog;
  prog.name = std::string("matmul_") + (s.order == MatmulOrder::kWeightStationary ? "naive_" : "exch_") +
              std::string(dtype_name(s.wtype)) + "_n" + std::to_string(s.n) + "_in" + std::to_string(s.in) + "_out" +
              std::to_string(s.out) + (s.double_buffer ? "" : "_single") + (s.double_buffer_out ? "" : "_single_out");
  const uint32_t bx = prog.add_buffer("x", uint64_t(s.n) * s.in * 2, false);
  const uint32_t bw = prog.add_buffer("w", packed_weight_bytes(s, t), false);
  const uint32_t by = prog.add_buffer("y", uint64_t(s.n) * s.out * 2, true);
  TANDEM_RETURN_IF_ERROR(emit_projections(s, {{s.out, bw, by}}, nullptr, p, t, bx, prog));
  return prog;
}

uint32_t matmul_arrays(const MatmulSpec& s, const TargetModel& t) {
  const uint32_t all = uint32_t(t.matrix.arrays);
  return s.arrays == 0 ? all : std::min(s.arrays, all);
}

double estimate_matmul_power_w(const MatmulSpec& s, const MatmulPlan& p, const TargetModel& t) {
  const CostModel cost(t);
  const double seconds = t.seconds(estimate_matmul_cycles(s, p, t));
  if (!(seconds > 0)) return 0;
  const double flops = 2.0 * double(p.n_pad) * p.in_pad * p.out_pad;
  const uint64_t nblocks = (p.n_pad + p.nb - 1) / p.nb;
  const double unpacked = s.wtype == DType::F16 ? 0 : double(nblocks) * p.out_pad * p.in_pad;
  const double lane_ops =
      unpacked > 0 ? cost.vector_lane_ops(s.wtype == DType::Q8_0 ? VecOp::kUnpackQ8 : VecOp::kUnpackQ4, uint64_t(unpacked)) : 0;
  const double dma = double(nblocks) * packed_weight_bytes(s, t) + double(s.n) * s.in * 2 + double(s.n) * s.out * 2;
  return cost.energy_joules(flops, lane_ops, dma, seconds) / seconds;
}

Result<std::vector<uint8_t>> pack_weights_from(const MatmulSpec& s, const TargetModel& t, DType source, const void* w,
                                               size_t w_bytes) {
  if (source == s.wtype) return pack_weights(s, t, w, w_bytes);
  // Any type dequantizes (ggml's arithmetic, core/quant.h) and rounds to f16.
  if (s.wtype != DType::F16)
    return Unsupported("matmul pack: cannot pack " + std::string(dtype_name(source)) + " rows as " +
                       std::string(dtype_name(s.wtype)));
  const size_t rb = row_bytes(source, s.in);
  if (w == nullptr || w_bytes < rb * s.out)
    return InvalidArgument("matmul pack: weight needs " + std::to_string(rb * s.out) + " B, got " + std::to_string(w_bytes));
  std::vector<uint16_t> rows(size_t(s.out) * s.in);
  std::vector<float> deq(s.in);
  const uint8_t* src = static_cast<const uint8_t*>(w);
  for (uint32_t o = 0; o < s.out; ++o) {
    const uint8_t* row = src + rb * o;
    dequantize_row(source, row, deq.data(), s.in);  // rounded to f16 below
    for (uint32_t i = 0; i < s.in; ++i) rows[size_t(o) * s.in + i] = f32_to_fp16(deq[i]);
  }
  return pack_weights(s, t, rows.data(), rows.size() * 2);
}

Result<PreparedMatmul> prepare_matmul(const MatmulSpec& s, const TargetModel& t, const void* w, size_t w_bytes,
                                      std::optional<DType> source) {
  PreparedMatmul pm;
  pm.spec = s;
  TANDEM_ASSIGN_OR_RETURN(pm.plan, plan_matmul(s, t));
  TANDEM_ASSIGN_OR_RETURN(pm.program, lower_matmul(s, t));
  TANDEM_ASSIGN_OR_RETURN(pm.weight_pack, pack_weights_from(s, t, source.value_or(s.wtype), w, w_bytes));
  pm.graph_bytes = (uint64_t(s.n) * s.in + uint64_t(s.n) * s.out) * 2;
  pm.prepare_seconds = t.prepare_seconds(pm.graph_bytes);
  return pm;
}

}  // namespace tandem::npu::oplib
