#include "npu/oplib/matmul_stream.h"

#include <algorithm>

#include "npu/oplib/round_up.h"

namespace tandem::npu::oplib {

namespace {

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
  kEvGain = 15,  // norm_linear: gain row loaded
  kEvNorm = 16,  // norm_linear: the n-block's rows normalized
  kNumEventsNorm = 17,
};

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

// The instruction stream of the matmul schedule over one X for every projection in turn (the
// plain matmul is one projection without a prologue). Buffers are declared by the caller.
Status emit_projections(const MatmulSpec& s, const std::vector<Projection>& proj, const NormPrologue* norm,
                        const MatmulPlan& p, const TargetModel& t, uint32_t bx, Program& prog) {
  const uint32_t T = p.T;
  const bool quant = s.wtype != DType::F16;
  const bool dbl = s.double_buffer;
  const bool dbl_y = s.double_buffer_out;
  const uint32_t channels = uint32_t(t.dma.channels);
  const uint32_t arrays = matmul_arrays(s, t);
  const uint32_t trow = t.tile_row_bytes();
  const uint32_t tbytes = t.tile_bytes();
  prog.num_events = norm ? kNumEventsNorm : kNumEvents;

  struct Step { uint32_t n0, nbr, seg, j0, rj, k0, rk; bool first_of_block, first_of_panel, last_of_panel; };
  std::vector<Step> steps;
  for (uint32_t n0 = 0; n0 < s.n; n0 += p.nb) {
    const uint32_t nbr = std::min(p.nb, s.n - n0);
    for (uint32_t seg = 0; seg < proj.size(); ++seg) {
      const uint32_t OT = round_up_u32(proj[seg].out, T) / T;
      for (uint32_t j0 = 0; j0 < OT; j0 += p.R)
        for (uint32_t k0 = 0; k0 < p.KT; k0 += p.kc)
          steps.push_back({n0, nbr, seg, j0, std::min(p.R, OT - j0), k0, std::min(p.kc, p.KT - k0),
                           seg == 0 && j0 == 0 && k0 == 0, k0 == 0, k0 + p.kc >= p.KT});
    }
  }

  auto slab_dma = [&](size_t si, uint32_t b) {
    const Step& st = steps[si];
    split_rows(st.rj, channels, [&](uint32_t r0, uint32_t nr) {
      DmaArgs d;
      d.buffer = proj[st.seg].w_buf;
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
  if (norm) {  // the gain row stays in TCM for the whole program
    DmaArgs d;
    d.buffer = norm->gain_buf;
    d.rows = 1;
    d.row_bytes = s.in * 2;
    d.tcm = p.g_addr;
    d.event = kEvGain;
    prog.emit(Instr::dma_load(d));
  }

  struct PendingStore { bool active = false; uint32_t n0, nbr, seg, j0, rj, yb; } pending;
  auto flush_store = [&]() {
    if (!pending.active) return;
    prog.emit(Instr::wait(kEvY + pending.yb));
    const uint32_t out = proj[pending.seg].out;
    const uint32_t cols = std::min(pending.rj * T, out - pending.j0 * T);
    split_rows(pending.nbr, channels, [&](uint32_t r0, uint32_t nr) {
      DmaArgs d;
      d.buffer = proj[pending.seg].y_buf;
      d.ddr_offset = (uint64_t(pending.n0 + r0) * out + pending.j0 * T) * 2;
      d.ddr_stride = uint64_t(out) * 2;
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
  if (norm) expected += size_t(s.n) * 2 + 4 * ((s.n + p.nb - 1) / p.nb);
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
      if (norm) {  // normalize the block's rows in place: x = x * g / sqrt(mean(x^2) + eps)
        if (si == 0) prog.emit(Instr::wait(kEvGain));
        for (uint32_t r = 0; r < st.nbr; ++r) {
          const uint32_t row = p.x_addr + r * p.x_pitch, scalar = p.s_addr;
          prog.emit(Instr::vector({VecOp::kSumSq, scalar, row, 0, 0, s.in, 0.0f, 0.0f}));
          prog.emit(Instr::vector({VecOp::kRmsApply, row, row, p.g_addr, scalar, s.in, 1.0f / float(s.in), norm->eps}));
        }
        prog.emit(Instr::signal(kEvNorm, kUnitVector));
        prog.emit(Instr::wait(kEvNorm));
      }
    }
    if (st.first_of_panel) {
      yb = dbl_y ? uint32_t(panel % 2) : 0;
      if (panel >= (dbl_y ? 2u : 1u)) prog.emit(Instr::wait(kEvYFree + yb));
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
    if (s.order == MatmulOrder::kActivationStationary) {
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
      pending = {true, st.n0, st.nbr, st.seg, st.j0, st.rj, yb};
      if (!dbl_y) flush_store();  // one output buffer: it must drain before the next panel
    }
    if (!dbl && si + 1 < steps.size()) {
      prog.emit(Instr::wait(kEvWFree + b));
      slab_dma(si + 1, 0);
    }
  }
  flush_store();
  return Status::Ok();
}

}  // namespace tandem::npu::oplib
