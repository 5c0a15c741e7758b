#include "npu/program.h"

#include <vector>

#include "core/quant.h"

namespace tandem::npu {

namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '.' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

const char* op_label(const Instr& in) {
  switch (in.op) {
    case Opcode::kDmaLoad: return "dma.load";
    case Opcode::kDmaStore: return "dma.store";
    case Opcode::kMma: return "mma";
    case Opcode::kVec: return "vec";
    case Opcode::kWait: return "wait";
    case Opcode::kSignal: return "signal";
    case Opcode::kBarrier: return "barrier";
  }
  return "?";
}

// End of a 2-D region (start + (rows-1)*stride + row_bytes), saturating instead of wrapping.
unsigned __int128 extent_end(uint64_t start, uint64_t rows, uint64_t stride, uint64_t row_bytes) {
  return (unsigned __int128)start + (unsigned __int128)(rows - 1) * stride + row_bytes;
}

std::string u128(unsigned __int128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v) { s.insert(s.begin(), char('0' + int(v % 10))); v /= 10; }
  return s;
}

}  // namespace

VecFootprint vec_footprint(VecOp op, uint32_t n) {
  const uint64_t h = uint64_t(n) * 2, f = uint64_t(n) * 4;
  switch (op) {
    case VecOp::kAdd:
    case VecOp::kMul:
    case VecOp::kSwiglu: return {h, h, h, 0};
    case VecOp::kScale:
    case VecOp::kSilu: return {h, h, 0, 0};
    case VecOp::kFill: return {h, 0, 0, 0};
    case VecOp::kSumSq: return {4, h, 0, 0};
    case VecOp::kRmsApply: return {h, h, h, 4};
    case VecOp::kCvtF32F16: return {h, f, 0, 0};
    case VecOp::kCvtF16F32: return {f, h, 0, 0};
    case VecOp::kUnpackQ8: return {h, uint64_t(n / kQK) * sizeof(BlockQ8_0), 0, 0};
    case VecOp::kUnpackQ4: return {h, uint64_t(n / kQK) * sizeof(BlockQ4_0), 0, 0};
  }
  return {0, 0, 0, 0};
}

Status verify(const Program& p, const TargetModel& t) {
  if (!valid_name(p.name)) return InvalidArgument("program name '" + p.name + "' must match [A-Za-z0-9_.-]+");
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const auto& b = p.buffers[i];
    if (!valid_name(b.name))
      return InvalidArgument("buffer " + std::to_string(i) + ": name '" + b.name + "' must match [A-Za-z0-9_.-]+");
    if (b.bytes == 0) return InvalidArgument("buffer " + std::to_string(i) + " (" + b.name + "): size 0");
  }
  if (p.num_events > kMaxEvents)
    return InvalidArgument("program declares " + std::to_string(p.num_events) + " events (at most " + std::to_string(kMaxEvents) + ")");
  const uint64_t tcm = t.tcm.bytes;
  const uint32_t align = t.tcm.alignment_bytes;
  const uint32_t T = uint32_t(t.matrix.tile_dim);
  const uint32_t row = t.tile_row_bytes();
  std::vector<bool> completed(p.num_events, false);  // something has completed into the event

  for (size_t idx = 0; idx < p.code.size(); ++idx) {
    const Instr& in = p.code[idx];
    auto err = [&](const std::string& m) {
      return InvalidArgument("instruction " + std::to_string(idx) + " (" + op_label(in) + "): " + m);
    };
    auto check_event = [&](uint32_t e) -> Status {
      if (e >= p.num_events)
        return err("event " + std::to_string(e) + " out of range (program declares " + std::to_string(p.num_events) + ")");
      return Status::Ok();
    };
    auto check_tcm = [&](const char* what, uint64_t addr, uint64_t rows, uint64_t stride, uint64_t bytes,
                         uint32_t alignment) -> Status {
      if (addr % alignment != 0)
        return err(std::string(what) + " TCM address " + std::to_string(addr) + " not aligned to " + std::to_string(alignment));
      if (rows > 1 && stride % alignment != 0)
        return err(std::string(what) + " TCM pitch " + std::to_string(stride) + " not aligned to " + std::to_string(alignment));
      const auto end = extent_end(addr, rows, stride, bytes);
      if (end > tcm)
        return err(std::string(what) + " TCM range [" + std::to_string(addr) + ", " + u128(end) + ") exceeds TCM size " +
                   std::to_string(tcm));
      return Status::Ok();
    };
    switch (in.op) {
      case Opcode::kDmaLoad:
      case Opcode::kDmaStore: {
        const DmaArgs& d = in.dma;
        if (d.buffer >= p.buffers.size())
          return err("buffer " + std::to_string(d.buffer) + " not declared (program has " + std::to_string(p.buffers.size()) + ")");
        const auto& buf = p.buffers[d.buffer];
        if (in.op == Opcode::kDmaStore && !buf.writable) return err("store into read-only buffer " + std::to_string(d.buffer) + " (" + buf.name + ")");
        if (d.rows == 0 || d.row_bytes == 0) return err("empty transfer (rows and row_bytes must be >= 1)");
        if (d.rows > 1 && (d.ddr_stride < d.row_bytes || d.tcm_stride < d.row_bytes))
          return err("row stride smaller than row_bytes (rows would overlap)");
        const auto end = extent_end(d.ddr_offset, d.rows, d.ddr_stride, d.row_bytes);
        if (end > buf.bytes)
          return err("DDR range [" + std::to_string(d.ddr_offset) + ", " + u128(end) + ") exceeds buffer " +
                     std::to_string(d.buffer) + " (" + buf.name + ", " + std::to_string(buf.bytes) + " B)");
        TANDEM_RETURN_IF_ERROR(check_tcm("dma", d.tcm, d.rows, d.tcm_stride, d.row_bytes, 2));
        TANDEM_RETURN_IF_ERROR(check_event(d.event));
        completed[d.event] = true;
        break;
      }
      case Opcode::kMma: {
        const MmaArgs& m = in.mma;
        if (m.unit >= uint32_t(t.matrix.arrays))
          return err("matrix unit " + std::to_string(m.unit) + " out of range (target has " + std::to_string(t.matrix.arrays) + ")");
        const uint32_t lds[3] = {m.lda, m.ldb, m.ldc};
        for (uint32_t ld : lds)
          if (ld < row) return err("row pitch " + std::to_string(ld) + " smaller than a tile row (" + std::to_string(row) + " B)");
        TANDEM_RETURN_IF_ERROR(check_tcm("A", m.a, T, m.lda, row, align));
        TANDEM_RETURN_IF_ERROR(check_tcm("B", m.b, T, m.ldb, row, align));
        TANDEM_RETURN_IF_ERROR(check_tcm("C", m.c, T, m.ldc, row, align));
        break;
      }
      case Opcode::kVec: {
        const VecArgs& v = in.vec;
        if (uint32_t(v.op) >= uint32_t(kNumVecOps)) return err("unknown vector op " + std::to_string(int(v.op)));
        if (v.n == 0) return err("vector op on 0 elements");
        if ((v.op == VecOp::kUnpackQ8 || v.op == VecOp::kUnpackQ4) && v.n % kQK != 0)
          return err("unpack of " + std::to_string(v.n) + " elements: not a multiple of the block size " + std::to_string(kQK));
        const VecFootprint f = vec_footprint(v.op, v.n);
        TANDEM_RETURN_IF_ERROR(check_tcm("dst", v.dst, 1, 0, f.dst_bytes, align));
        if (f.a_bytes) TANDEM_RETURN_IF_ERROR(check_tcm("a", v.a, 1, 0, f.a_bytes, align));
        if (f.b_bytes) TANDEM_RETURN_IF_ERROR(check_tcm("b", v.b, 1, 0, f.b_bytes, align));
        if (f.c_bytes) TANDEM_RETURN_IF_ERROR(check_tcm("c", v.c, 1, 0, f.c_bytes, 4));
        break;
      }
      case Opcode::kWait:
        TANDEM_RETURN_IF_ERROR(check_event(in.sync.event));
        if (!completed[in.sync.event])
          return err("waits on event " + std::to_string(in.sync.event) + " that nothing before it completes into");
        break;
      case Opcode::kSignal:
        TANDEM_RETURN_IF_ERROR(check_event(in.sync.event));
        if (in.sync.units == 0 || (in.sync.units & ~kUnitAll) != 0)
          return err("unit mask " + std::to_string(in.sync.units) + " must be a non-empty subset of dma|mat|vec");
        completed[in.sync.event] = true;
        break;
      case Opcode::kBarrier: break;
      default: return err("unknown opcode " + std::to_string(int(in.op)));
    }
  }
  return Status::Ok();
}

}  // namespace tandem::npu
