#include "npu/oplib/elementwise.h"

#include <algorithm>

namespace tandem::npu::oplib {

namespace {
enum : uint32_t { kEvLoad = 0, kEvComputed = 2, kEvStored = 4, kEvWeight = 6, kNumEvents = 7 };
uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }
}  // namespace

std::string_view elt_op_name(EltOp op) {
  return op == EltOp::kRmsNorm ? "rmsnorm" : op == EltOp::kSwiglu ? "swiglu" : "add";
}

std::optional<EltOp> elt_op_from_name(std::string_view name) {
  for (EltOp op : {EltOp::kRmsNorm, EltOp::kSwiglu, EltOp::kAdd})
    if (elt_op_name(op) == name) return op;
  return std::nullopt;
}

uint64_t elementwise_tcm_bytes(EltOp op, uint32_t rows_per_chunk, uint32_t d, const TargetModel& t) {
  const uint64_t align = t.tcm.alignment_bytes, pitch = round_up(uint64_t(d) * 2, align);
  const uint64_t per_row = pitch * (op == EltOp::kRmsNorm ? 2 : 3) + (op == EltOp::kRmsNorm ? align : 0);
  return (op == EltOp::kRmsNorm ? pitch : 0) + 2 * per_row * rows_per_chunk;
}

Result<Program> lower_elementwise(EltOp op, uint32_t n, uint32_t d, const TargetModel& t, float eps, TcmWindow window) {
  if (n == 0 || d == 0) return InvalidArgument("elementwise: n and d must be >= 1");
  if (uint64_t(n) * d > (1ull << 31)) return InvalidArgument("elementwise: shape too large");
  const uint64_t align = t.tcm.alignment_bytes;
  if (window.base % align != 0 || window.base >= t.tcm.bytes)
    return InvalidArgument("elementwise: TCM window base " + std::to_string(window.base) + " is not an aligned TCM address");
  const uint64_t tcm_bytes = window.bytes == 0 ? t.tcm.bytes - window.base : std::min(window.bytes, t.tcm.bytes - window.base);
  const uint32_t pitch = uint32_t(round_up(uint64_t(d) * 2, align));
  const uint32_t channels = uint32_t(t.dma.channels);
  Program prog;
  prog.name = std::string(elt_op_name(op)) + "_n" + std::to_string(n) + "_d" + std::to_string(d);
  const uint64_t act = uint64_t(n) * d * 2;
  const uint32_t b0 = prog.add_buffer(op == EltOp::kRmsNorm ? "x" : "a", act, false);
  const uint32_t b1 = prog.add_buffer(op == EltOp::kRmsNorm ? "w" : "b", op == EltOp::kRmsNorm ? uint64_t(d) * 2 : act, false);
  const uint32_t b2 = prog.add_buffer("y", act, true);
  prog.num_events = kNumEvents;

  // TCM: [weight row (rmsnorm)] then 2 x (in0, in1 (binary ops), out, scalars) chunks of rc rows.
  const bool binary = op != EltOp::kRmsNorm;
  const uint64_t w_bytes = op == EltOp::kRmsNorm ? pitch : 0;
  const uint64_t per_row = uint64_t(pitch) * (binary ? 3 : 2) + (op == EltOp::kRmsNorm ? align : 0);
  if (w_bytes + 2 * per_row > tcm_bytes)
    return Unsupported("elementwise: one row of d=" + std::to_string(d) + " does not fit " + std::to_string(tcm_bytes) + " B of TCM");
  const uint32_t rc = uint32_t(std::min<uint64_t>(n, (tcm_bytes - w_bytes) / (2 * per_row)));
  struct Buf { uint32_t in0, in1, out, scal; } buf[2];
  uint64_t addr = window.base + w_bytes;
  for (auto& bb : buf) {
    bb.in0 = uint32_t(addr); addr += uint64_t(rc) * pitch;
    bb.in1 = binary ? uint32_t(addr) : 0; addr += binary ? uint64_t(rc) * pitch : 0;
    bb.out = uint32_t(addr); addr += uint64_t(rc) * pitch;
    bb.scal = uint32_t(addr); addr += op == EltOp::kRmsNorm ? uint64_t(rc) * align : 0;
  }

  auto load_rows = [&](uint32_t buffer, uint32_t r0, uint32_t rows, uint32_t tcm, uint32_t ev, bool store) {
    const uint32_t parts = std::max<uint32_t>(1, std::min(channels, rows));
    uint32_t a = 0;
    for (uint32_t p = 0; p < parts; ++p) {
      const uint32_t b = uint32_t(uint64_t(rows) * (p + 1) / parts);
      if (b == a) continue;
      DmaArgs dm;
      dm.buffer = buffer;
      dm.ddr_offset = uint64_t(r0 + a) * d * 2;
      dm.ddr_stride = uint64_t(d) * 2;
      dm.rows = b - a;
      dm.row_bytes = d * 2;
      dm.tcm = tcm + a * pitch;
      dm.tcm_stride = pitch;
      dm.event = ev;
      prog.emit(store ? Instr::dma_store(dm) : Instr::dma_load(dm));
      a = b;
    }
  };
  auto load_chunk = [&](uint32_t c, uint32_t b) {
    const uint32_t r0 = c * rc, rows = std::min(rc, n - r0);
    load_rows(b0, r0, rows, buf[b].in0, kEvLoad + b, false);
    if (binary) load_rows(b1, r0, rows, buf[b].in1, kEvLoad + b, false);
  };

  if (op == EltOp::kRmsNorm) {
    DmaArgs dm;
    dm.buffer = b1; dm.rows = 1; dm.row_bytes = d * 2; dm.tcm = window.base; dm.event = kEvWeight;
    prog.emit(Instr::dma_load(dm));
  }
  const uint32_t chunks = (n + rc - 1) / rc;
  load_chunk(0, 0);
  if (op == EltOp::kRmsNorm) prog.emit(Instr::wait(kEvWeight));
  for (uint32_t c = 0; c < chunks; ++c) {
    const uint32_t b = c % 2, r0 = c * rc, rows = std::min(rc, n - r0);
    prog.emit(Instr::wait(kEvLoad + b));
    if (c >= 2) prog.emit(Instr::wait(kEvStored + b));
    const Buf& B = buf[b];
    switch (op) {
      case EltOp::kRmsNorm:
        for (uint32_t r = 0; r < rows; ++r) {
          prog.emit(Instr::vector({VecOp::kSumSq, uint32_t(B.scal + r * align), B.in0 + r * pitch, 0, 0, d, 0.0f, 0.0f}));
          prog.emit(Instr::vector({VecOp::kRmsApply, B.out + r * pitch, B.in0 + r * pitch, window.base, uint32_t(B.scal + r * align), d,
                                   1.0f / float(d), eps}));
        }
        break;
      case EltOp::kSwiglu:
      case EltOp::kAdd: {
        // One op over the whole chunk; padding lanes between rows are computed and never stored.
        const uint32_t elems = uint32_t((uint64_t(rows - 1) * pitch) / 2 + d);
        prog.emit(Instr::vector({op == EltOp::kAdd ? VecOp::kAdd : VecOp::kSwiglu, B.out, B.in0, B.in1, 0, elems, 0.0f, 0.0f}));
        break;
      }
    }
    prog.emit(Instr::signal(kEvComputed + b, kUnitVector));
    if (c + 1 < chunks) {
      if (c >= 1) prog.emit(Instr::wait(kEvComputed + (b ^ 1)));
      load_chunk(c + 1, b ^ 1);
    }
    prog.emit(Instr::wait(kEvComputed + b));
    load_rows(b2, r0, rows, B.out, kEvStored + b, true);
  }
  return prog;
}

}  // namespace tandem::npu::oplib
