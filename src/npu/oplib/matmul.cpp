#include "npu/oplib/matmul.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/quant.h"

namespace tandem::npu::oplib {

namespace {

uint32_t round_up(uint64_t v, uint64_t m) { return uint32_t((v + m - 1) / m * m); }

// Events of the matmul program.
enum : uint32_t {
  kEvX = 0,      // X rows loaded
  kEvXFree = 1,  // all tile ops reading X finished
  kEvW = 2,      // +b: slab DMA into W[b] done
  kEvWFree = 4,  // +b: W[b] may be overwritten
  kEvU = 6,      // +b: unpack into U[b] done
  kEvUFree = 8,  // +b: tile ops reading U[b] done
  kEvY = 10,     // +b: panel in Y[b] computed
  kEvYFree = 12, // +b: store of Y[b] done
  kEvFill = 14,
  kNumEvents = 15,
};

Status check_spec(const MatmulSpec& s) {
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

uint32_t tile_bytes_for(DType w, uint32_t T) {
  if (w == DType::Q8_0) return T * uint32_t(sizeof(BlockQ8_0)) * (T / kQK);
  if (w == DType::Q4_0) return T * uint32_t(sizeof(BlockQ4_0)) * (T / kQK);
  return T * T * 2;
}

// Splits `rows` rows into up to `parts` contiguous DMA transfers (one per channel).
template <class F>
void split_rows(uint32_t rows, uint32_t parts, F&& emit) {
  parts = std::max<uint32_t>(1, std::min(parts, rows));
  uint32_t r0 = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    const uint32_t r1 = uint32_t(uint64_t(rows) * (p + 1) / parts);
    if (r1 > r0) emit(r0, r1 - r0);
    r0 = r1;
  }
}

}  // namespace

std::string MatmulPlan::describe() const {
  std::ostringstream o;
  o << "tiles " << NT << "x" << KT << "x" << OT << " (n x in x out, T=" << T << "), n-block " << nb << " rows, slab "
    << R << " out-tiles x " << kc << " in-tiles (" << wtile_bytes << " B/tile), " << steps << " slabs, TCM " << tcm_used
    << " B";
  return o.str();
}

uint64_t packed_weight_bytes(const MatmulSpec& s, const TargetModel& t) {
  const uint32_t T = uint32_t(t.matrix.tile_dim);
  return uint64_t(round_up(s.out, T) / T) * (round_up(s.in, T) / T) * tile_bytes_for(s.wtype, T);
}

Result<MatmulPlan> plan_matmul(const MatmulSpec& s, const TargetModel& t) {
  TANDEM_RETURN_IF_ERROR(check_spec(s));
  MatmulPlan p;
  const uint32_t T = p.T = uint32_t(t.matrix.tile_dim);
  if (s.wtype != DType::F16 && T % kQK != 0) return Unsupported("matmul: tile size must be a multiple of the quant block");
  p.n_pad = round_up(s.n, T);
  p.in_pad = round_up(s.in, T);
  p.out_pad = round_up(s.out, T);
  p.NT = p.n_pad / T;
  p.KT = p.in_pad / T;
  p.OT = p.out_pad / T;
  p.wtile_bytes = tile_bytes_for(s.wtype, T);
  const uint64_t tcm = t.tcm.bytes, align = t.tcm.alignment_bytes;
  p.x_pitch = p.in_pad * 2;
  // X resident: an n-block of rows must fit in half the TCM.
  const uint64_t x_rows_fit = (tcm / 2) / p.x_pitch / T * T;
  if (x_rows_fit < T)
    return Unsupported("matmul: in=" + std::to_string(s.in) + " too large: " + std::to_string(T) + " rows of X (" +
                       std::to_string(uint64_t(T) * p.x_pitch) + " B) exceed half the TCM");
  p.nb = uint32_t(std::min<uint64_t>(p.n_pad, x_rows_fit));
  const bool quant = s.wtype != DType::F16;
  const uint64_t slab_target = 256 * 1024;  // raw bytes per slab: amortizes DMA setup, short prologue
  auto total = [&](uint32_t R, uint32_t kc) {
    const uint64_t x = uint64_t(p.nb) * p.x_pitch;
    const uint64_t y = round_up(uint64_t(p.nb) * R * T * 2, align);
    const uint64_t w = round_up(uint64_t(R) * kc * p.wtile_bytes, align);
    const uint64_t u = quant ? uint64_t(R) * kc * T * T * 2 : 0;
    return x + 2 * (y + w + u);
  };
  uint32_t R = std::min<uint32_t>(p.OT, 32);
  uint32_t kc = uint32_t(std::clamp<uint64_t>(slab_target / (uint64_t(R) * p.wtile_bytes), 1, p.KT));
  while (total(R, kc) > tcm && kc > 1) kc = std::max<uint32_t>(1, kc / 2);
  while (total(R, kc) > tcm && R > 1) R = std::max<uint32_t>(1, R / 2);
  if (total(R, kc) > tcm) return Unsupported("matmul: does not fit the TCM even with 1x1-tile slabs");
  p.R = R;
  p.kc = kc;
  uint64_t addr = 0;
  auto alloc = [&](uint64_t bytes) { const uint32_t a = uint32_t(addr); addr = round_up(addr + bytes, align); return a; };
  p.x_addr = alloc(uint64_t(p.nb) * p.x_pitch);
  for (int b = 0; b < 2; ++b) p.y_addr[b] = alloc(uint64_t(p.nb) * R * T * 2);
  for (int b = 0; b < 2; ++b) p.w_addr[b] = alloc(uint64_t(R) * kc * p.wtile_bytes);
  for (int b = 0; b < 2 && quant; ++b) p.u_addr[b] = alloc(uint64_t(R) * kc * T * T * 2);
  p.tcm_used = addr;
  const uint64_t nblocks = (p.n_pad + p.nb - 1) / p.nb;
  p.steps = nblocks * ((p.OT + R - 1) / R) * ((p.KT + kc - 1) / kc);
  return p;
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
  const uint32_t T = p.T;
  const bool quant = s.wtype != DType::F16;
  const bool dbl = s.double_buffer;
  const uint32_t channels = uint32_t(t.dma.channels);
  const uint32_t arrays = uint32_t(t.matrix.arrays);
  const uint32_t trow = t.tile_row_bytes();
  const uint32_t tbytes = t.tile_bytes();

  Program prog;
  prog.name = std::string("matmul_") + (s.order == MatmulOrder::kNaive ? "naive_" : "exch_") +
              std::string(dtype_name(s.wtype)) + "_n" + std::to_string(s.n) + "_in" + std::to_string(s.in) + "_out" +
              std::to_string(s.out) + (dbl ? "" : "_single");
  const uint32_t bx = prog.add_buffer("x", uint64_t(s.n) * s.in * 2, false);
  const uint32_t bw = prog.add_buffer("w", packed_weight_bytes(s, t), false);
  const uint32_t by = prog.add_buffer("y", uint64_t(s.n) * s.out * 2, true);
  prog.num_events = kNumEvents;

  struct Step { uint32_t n0, nbr, j0, rj, k0, rk; bool first_of_block, first_of_panel, last_of_panel; };
  std::vector<Step> steps;
  for (uint32_t n0 = 0; n0 < s.n; n0 += p.nb) {
    const uint32_t nbr = std::min(p.nb, s.n - n0);
    for (uint32_t j0 = 0; j0 < p.OT; j0 += p.R)
      for (uint32_t k0 = 0; k0 < p.KT; k0 += p.kc)
        steps.push_back({n0, nbr, j0, std::min(p.R, p.OT - j0), k0, std::min(p.kc, p.KT - k0), j0 == 0 && k0 == 0, k0 == 0,
                         k0 + p.kc >= p.KT});
  }

  auto slab_dma = [&](size_t si, uint32_t b) {
    const Step& st = steps[si];
    split_rows(st.rj, channels, [&](uint32_t r0, uint32_t nr) {
      DmaArgs d;
      d.buffer = bw;
      d.ddr_offset = (uint64_t(st.j0 + r0) * p.KT + st.k0) * p.wtile_bytes;
      d.ddr_stride = uint64_t(p.KT) * p.wtile_bytes;
      d.rows = nr;
      d.row_bytes = st.rk * p.wtile_bytes;
      d.tcm = p.w_addr[b] + r0 * d.row_bytes;
      d.tcm_stride = d.row_bytes;
      d.event = kEvW + b;
      prog.emit(Instr::dma_load(d));
    });
  };

  if (s.in % T != 0) {  // zero the padding columns of X once (padding rows only reach unstored outputs)
    prog.emit(Instr::vector({VecOp::kFill, p.x_addr, 0, 0, 0, p.nb * p.in_pad, 0.0f, 0.0f}));
    prog.emit(Instr::signal(kEvFill, kUnitVector));
    prog.emit(Instr::wait(kEvFill));
  }

  struct PendingStore { bool active = false; uint32_t n0, nbr, j0, rj, yb; } pending;
  auto flush_store = [&]() {
    if (!pending.active) return;
    prog.emit(Instr::wait(kEvY + pending.yb));
    const uint32_t cols = std::min(pending.rj * T, s.out - pending.j0 * T);
    split_rows(pending.nbr, channels, [&](uint32_t r0, uint32_t nr) {
      DmaArgs d;
      d.buffer = by;
      d.ddr_offset = (uint64_t(pending.n0 + r0) * s.out + pending.j0 * T) * 2;
      d.ddr_stride = uint64_t(s.out) * 2;
      d.rows = nr;
      d.row_bytes = cols * 2;
      d.tcm = p.y_addr[pending.yb] + r0 * p.R * trow;
      d.tcm_stride = p.R * trow;
      d.event = kEvYFree + pending.yb;
      prog.emit(Instr::dma_store(d));
    });
    pending.active = false;
  };

  // One tile op per (in-tile, n-tile, out-tile) of every slab, plus a few DMA/sync packets per
  // slab: reserving once keeps lowering big shapes from reallocating (the profiler lowers many).
  size_t expected = 16;
  for (const Step& st : steps) expected += size_t(st.rk) * ((st.nbr + T - 1) / T) * st.rj + 3 * channels + 12;
  prog.code.reserve(expected);
  slab_dma(0, 0);
  uint64_t panel = 0;
  uint32_t yb = 0;
  for (size_t si = 0; si < steps.size(); ++si) {
    const Step& st = steps[si];
    const uint32_t b = dbl ? uint32_t(si % 2) : 0;
    if (st.first_of_block) {
      if (si > 0) {
        prog.emit(Instr::signal(kEvXFree, kUnitMatrix));
        prog.emit(Instr::wait(kEvXFree));
      }
      split_rows(st.nbr, channels, [&](uint32_t r0, uint32_t nr) {
        DmaArgs d;
        d.buffer = bx;
        d.ddr_offset = uint64_t(st.n0 + r0) * s.in * 2;
        d.ddr_stride = uint64_t(s.in) * 2;
        d.rows = nr;
        d.row_bytes = s.in * 2;
        d.tcm = p.x_addr + r0 * p.x_pitch;
        d.tcm_stride = p.x_pitch;
        d.event = kEvX;
        prog.emit(Instr::dma_load(d));
      });
      prog.emit(Instr::wait(kEvX));
    }
    if (st.first_of_panel) {
      yb = uint32_t(panel % 2);
      if (panel >= 2) prog.emit(Instr::wait(kEvYFree + yb));
      ++panel;
    }
    prog.emit(Instr::wait(kEvW + b));
    uint32_t wsrc = p.w_addr[b];
    if (quant) {
      if (si >= (dbl ? 2u : 1u)) prog.emit(Instr::wait(kEvUFree + b));
      const VecOp op = s.wtype == DType::Q8_0 ? VecOp::kUnpackQ8 : VecOp::kUnpackQ4;
      prog.emit(Instr::vector({op, p.u_addr[b], p.w_addr[b], 0, 0, st.rj * st.rk * T * T, 0.0f, 0.0f}));
      prog.emit(Instr::signal(kEvWFree + b, kUnitVector));
      prog.emit(Instr::signal(kEvU + b, kUnitVector));
      wsrc = p.u_addr[b];
    }
    if (dbl && si + 1 < steps.size()) {
      const uint32_t nb2 = uint32_t((si + 1) % 2);
      if (si >= 1) prog.emit(Instr::wait(kEvWFree + nb2));
      slab_dma(si + 1, nb2);
    }
    if (quant) prog.emit(Instr::wait(kEvU + b));

    // Tile ops of this slab.
    const uint32_t NTb = (st.nbr + T - 1) / T;
    const uint32_t ypitch = p.R * trow;
    const uint32_t ybase = p.y_addr[yb];
    auto wtile = [&](uint32_t jj, uint32_t kk) { return wsrc + (jj * st.rk + kk) * tbytes; };
    auto xtile = [&](uint32_t i, uint32_t k) { return p.x_addr + i * T * p.x_pitch + k * trow; };
    if (s.order == MatmulOrder::kExchanged) {
      // Held: X tile (i, k) read transposed; streamed: weight tiles of the slab; C = Y^T tile.
      const uint32_t G = NTb >= arrays ? 1 : std::max<uint32_t>(1, std::min(st.rj, arrays / NTb));
      for (uint32_t kk = 0; kk < st.rk; ++kk)
        for (uint32_t i = 0; i < NTb; ++i)
          for (uint32_t g = 0; g < G; ++g) {
            const uint32_t unit = (i * G + g) % arrays;
            for (uint32_t jj = g * st.rj / G; jj < (g + 1) * st.rj / G; ++jj) {
              MmaArgs m;
              m.unit = unit;
              m.a = wtile(jj, kk); m.lda = trow;
              m.b = xtile(i, st.k0 + kk); m.ldb = p.x_pitch; m.tb = true;
              m.c = ybase + i * T * ypitch + jj * trow; m.ldc = ypitch; m.tc = true;
              m.acc = st.k0 + kk > 0;
              prog.emit(Instr::matmul(m));
            }
          }
    } else {
      // Held: weight tile (jj, k) read transposed; streamed: X tiles; C = Y tile.
      for (uint32_t kk = 0; kk < st.rk; ++kk)
        for (uint32_t jj = 0; jj < st.rj; ++jj)
          for (uint32_t i = 0; i < NTb; ++i) {
            MmaArgs m;
            m.unit = jj % arrays;
            m.a = xtile(i, st.k0 + kk); m.lda = p.x_pitch;
            m.b = wtile(jj, kk); m.ldb = trow; m.tb = true;
            m.c = ybase + i * T * ypitch + jj * trow; m.ldc = ypitch;
            m.acc = st.k0 + kk > 0;
            prog.emit(Instr::matmul(m));
          }
    }
    prog.emit(Instr::signal((quant ? kEvUFree : kEvWFree) + b, kUnitMatrix));
    flush_store();  // the previous panel's write-back overlaps this slab's tile ops
    if (st.last_of_panel) {
      prog.emit(Instr::signal(kEvY + yb, kUnitMatrix));
      pending = {true, st.n0, st.nbr, st.j0, st.rj, yb};
    }
    if (!dbl && si + 1 < steps.size()) {
      prog.emit(Instr::wait(kEvWFree + b));
      slab_dma(si + 1, 0);
    }
  }
  flush_store();
  return prog;
}

Result<PreparedMatmul> prepare_matmul(const MatmulSpec& s, const TargetModel& t, const void* w, size_t w_bytes) {
  PreparedMatmul pm;
  pm.spec = s;
  TANDEM_ASSIGN_OR_RETURN(pm.plan, plan_matmul(s, t));
  TANDEM_ASSIGN_OR_RETURN(pm.program, lower_matmul(s, t));
  TANDEM_ASSIGN_OR_RETURN(pm.weight_pack, pack_weights(s, t, w, w_bytes));
  pm.graph_bytes = (uint64_t(s.n) * s.in + uint64_t(s.n) * s.out) * 2;
  pm.prepare_seconds = t.prepare_seconds(pm.graph_bytes);
  return pm;
}

}  // namespace tandem::npu::oplib
