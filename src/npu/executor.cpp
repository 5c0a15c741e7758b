#include "npu/executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/fp16_rows.h"
#include "core/half.h"
#include "core/quant.h"
#include "npu/kernels/tile_product.h"

namespace tandem::npu {

namespace {

// Every fp16 value widened once, up front: the functional model converts millions of tile
// elements per matmul, and a table load is several times cheaper than the bit-level conversion.
const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    std::vector<uint8_t> halves(65536 * 2);
    for (uint32_t h = 0; h < 65536; ++h) {
      const fp16_t v = fp16_t(h);
      std::memcpy(&halves[h * 2], &v, 2);
    }
    widen_fp16_row_portable(halves.data(), t.data(), 65536);  // the rows' exact semantics
    return t;
  }();
  return table.data();
}

inline float ld_h(const uint8_t* p) { fp16_t h; std::memcpy(&h, p, 2); return fp16_table()[h]; }
inline void st_h(uint8_t* p, float f) { const fp16_t h = f32_to_fp16(f); std::memcpy(p, &h, 2); }
// dst = src^T for T x T fp32 tiles.
void transpose(const float* src, float* dst, int T) {
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) dst[size_t(j) * T + i] = src[size_t(i) * T + j];
}

inline float ld_f(const uint8_t* p) { float f; std::memcpy(&f, p, 4); return f; }
inline void st_f(uint8_t* p, float f) { std::memcpy(p, &f, 4); }

struct Range {
  uint64_t lo, hi;
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
};

}  // namespace

double ExecReport::matrix_busy_total() const {
  double s = 0;
  for (double b : matrix_busy_cycles) s += b;
  return s;
}

std::string ExecReport::summary() const {
  std::ostringstream o;
  o.precision(4);
  o << seconds * 1e6 << " us (" << total_cycles << " cycles); matrix busy " << matrix_busy_total() << " (sum of "
    << matrix_busy_cycles.size() << " arrays), vector " << vector_busy_cycles << ", dma " << dma_busy_cycles
    << "; " << mma_ops << " tile ops, " << stationary_swaps << " swaps; dma in " << dma_bytes_in << " B out "
    << dma_bytes_out << " B; " << energy_j * 1e3 << " mJ";
  return o.str();
}

// The TCM image is allocated on the first functional run: timing-only runs (the simulator and
// the profiler time thousands of programs) never touch it.
Executor::Executor(const TargetModel& t) : t_(t), cost_(t) {}

void Executor::bind(uint32_t id, void* data, size_t bytes) {
  if (bindings_.size() <= id) bindings_.resize(id + 1);
  bindings_[id] = {static_cast<uint8_t*>(data), static_cast<const uint8_t*>(data), bytes};
}

void Executor::bind_const(uint32_t id, const void* data, size_t bytes) {
  if (bindings_.size() <= id) bindings_.resize(id + 1);
  bindings_[id] = {nullptr, static_cast<const uint8_t*>(data), bytes};
}

// C (+)= A . B for one T x T tile: products summed over k in ascending order in fp32 (the array's
// accumulator), rounded to fp16 once when C is stored.
void Executor::exec_mma(const MmaArgs& m) {
  const int T = t_.matrix.tile_dim;
  const size_t TT = size_t(T) * T;
  if (mma_a_.size() < TT) mma_a_.resize(TT), mma_b_.resize(TT), mma_out_.resize(TT);
  float* a = mma_a_.data();
  float* b = mma_b_.data();
  float* out = mma_out_.data();
  for (int i = 0; i < T; ++i) widen_fp16_row(&tcm_[m.a + size_t(i) * m.lda], a + size_t(i) * T, T);
  // b[k][j] = B(k, j); with tb the array loads the stored tile S column-wise: B(k, j) = S(j, k).
  float* s = m.tb ? out : b;
  for (int i = 0; i < T; ++i) widen_fp16_row(&tcm_[m.b + size_t(i) * m.ldb], s + size_t(i) * T, T);
  if (m.tb) transpose(out, b, T);
  kernels::tile_product(a, b, out, T);
  // With tc, C is written through the transposing port: memory row j holds column j of out.
  if (m.tc) {
    transpose(out, a, T);
    out = a;
  }
  for (int r = 0; r < T; ++r) narrow_fp16_row(out + size_t(r) * T, &tcm_[m.c + size_t(r) * m.ldc], T, m.acc);
}

void Executor::exec_vec(const VecArgs& v) {
  uint8_t* M = tcm_.data();
  const size_t n = v.n;
  switch (v.op) {
    case VecOp::kAdd:
      for (size_t i = 0; i < n; ++i) st_h(M + v.dst + 2 * i, ld_h(M + v.a + 2 * i) + ld_h(M + v.b + 2 * i));
      break;
    case VecOp::kMul:
      for (size_t i = 0; i < n; ++i) st_h(M + v.dst + 2 * i, ld_h(M + v.a + 2 * i) * ld_h(M + v.b + 2 * i));
      break;
    case VecOp::kScale:
      for (size_t i = 0; i < n; ++i) st_h(M + v.dst + 2 * i, ld_h(M + v.a + 2 * i) * v.imm0);
      break;
    case VecOp::kFill:
      for (size_t i = 0; i < n; ++i) st_h(M + v.dst + 2 * i, v.imm0);
      break;
    case VecOp::kSilu:
      for (size_t i = 0; i < n; ++i) {
        const float x = ld_h(M + v.a + 2 * i);
        st_h(M + v.dst + 2 * i, x / (1.0f + std::exp(-x)));
      }
      break;
    case VecOp::kSwiglu:
      for (size_t i = 0; i < n; ++i) {
        const float x = ld_h(M + v.a + 2 * i);
        st_h(M + v.dst + 2 * i, x / (1.0f + std::exp(-x)) * ld_h(M + v.b + 2 * i));
      }
      break;
    case VecOp::kSumSq: {
      float s = 0;
      for (size_t i = 0; i < n; ++i) { const float x = ld_h(M + v.a + 2 * i); s += x * x; }
      st_f(M + v.dst, s);
      break;
    }
    case VecOp::kRmsApply: {
      const float r = 1.0f / std::sqrt(ld_f(M + v.c) * v.imm0 + v.imm1);
      for (size_t i = 0; i < n; ++i) st_h(M + v.dst + 2 * i, ld_h(M + v.a + 2 * i) * r * ld_h(M + v.b + 2 * i));
      break;
    }
    case VecOp::kCvtF32F16:
      for (size_t i = 0; i < n; ++i) st_h(M + v.dst + 2 * i, ld_f(M + v.a + 4 * i));
      break;
    case VecOp::kCvtF16F32: {
      // Read all first: dst may overlap a (widening in place is not supported by the hardware
      // either, but must not corrupt the host).
      std::vector<float> tmp(n);
      for (size_t i = 0; i < n; ++i) tmp[i] = ld_h(M + v.a + 2 * i);
      for (size_t i = 0; i < n; ++i) st_f(M + v.dst + 4 * i, tmp[i]);
      break;
    }
    case VecOp::kUnpackQ8:
    case VecOp::kUnpackQ4: {
      // Blocks are copied out first (TCM addresses carry no alignment promise for the struct).
      const bool q8 = v.op == VecOp::kUnpackQ8;
      const size_t block_bytes = q8 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0);
      vec_tmp_.resize(n);
      vec_blocks_.resize(n / kQK * block_bytes);
      std::memcpy(vec_blocks_.data(), M + v.a, vec_blocks_.size());
      if (q8) {
        dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(vec_blocks_.data()), vec_tmp_.data(), n);
      } else {
        dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(vec_blocks_.data()), vec_tmp_.data(), n);
      }
      narrow_fp16_row(vec_tmp_.data(), M + v.dst, int(n), false);
      break;
    }
  }
}

void Executor::exec_functional(const Program& p, const Instr& in) {
  switch (in.op) {
    case Opcode::kDmaLoad: {
      const DmaArgs& d = in.dma;
      const uint8_t* src = bindings_[d.buffer].cdata;
      for (uint32_t r = 0; r < d.rows; ++r)
        std::memmove(&tcm_[d.tcm + size_t(r) * d.tcm_stride], src + d.ddr_offset + r * d.ddr_stride, d.row_bytes);
      break;
    }
    case Opcode::kDmaStore: {
      const DmaArgs& d = in.dma;
      uint8_t* dst = bindings_[d.buffer].data;
      for (uint32_t r = 0; r < d.rows; ++r)
        std::memmove(dst + d.ddr_offset + r * d.ddr_stride, &tcm_[d.tcm + size_t(r) * d.tcm_stride], d.row_bytes);
      break;
    }
    case Opcode::kMma: exec_mma(in.mma); break;
    case Opcode::kVec: exec_vec(in.vec); break;
    default: break;
  }
}

Result<ExecReport> Executor::run(const Program& p, const ExecOptions& opt) {
  TANDEM_RETURN_IF_ERROR(verify(p, t_));
  if (opt.functional) {
    if (tcm_.empty()) tcm_.assign(t_.tcm.bytes, 0);
    // Every buffer a DMA touches must be bound, large enough, and writable if stored to.
    std::vector<uint8_t> used(p.buffers.size(), 0);
    for (const auto& in : p.code) {
      if (in.op == Opcode::kDmaLoad) used[in.dma.buffer] |= 1;
      if (in.op == Opcode::kDmaStore) used[in.dma.buffer] |= 2;
    }
    for (size_t i = 0; i < used.size(); ++i) {
      if (!used[i]) continue;
      const std::string name = "buffer " + std::to_string(i) + " (" + p.buffers[i].name + ")";
      if (i >= bindings_.size() || bindings_[i].cdata == nullptr) return InvalidArgument(name + " is not bound");
      if (bindings_[i].bytes < p.buffers[i].bytes)
        return InvalidArgument(name + " bound to " + std::to_string(bindings_[i].bytes) + " B, program declares " +
                               std::to_string(p.buffers[i].bytes));
      if ((used[i] & 2) && bindings_[i].data == nullptr) return InvalidArgument(name + " is stored to but bound const");
    }
  }

  ExecReport rep;
  const int arrays = t_.matrix.arrays;
  rep.matrix_busy_cycles.assign(size_t(arrays), 0.0);
  const uint32_t T = uint32_t(t_.matrix.tile_dim);
  const uint32_t row = t_.tile_row_bytes();

  // Timing state.
  double now = 0;  // scalar core issue clock
  std::vector<double> dma_free(size_t(t_.dma.channels), 0.0), mat_free(size_t(arrays), 0.0);
  double vec_free = 0;
  std::vector<double> event_time(p.num_events, 0.0);
  struct Held { bool valid = false; uint32_t b = 0, ldb = 0; bool tb = false; Range range{0, 0}; };
  std::vector<Held> held(static_cast<size_t>(arrays));
  auto tcm_written = [&](Range r) {
    for (auto& h : held)
      if (h.valid && h.range.overlaps(r)) h.valid = false;
  };

  for (const Instr& in : p.code) {
    if (opt.functional) exec_functional(p, in);
    if (!opt.timing) continue;
    const double issue = cost_.issue_cycles(in.op);
    now += issue;
    rep.issue_cycles += issue;
    switch (in.op) {
      case Opcode::kDmaLoad:
      case Opcode::kDmaStore: {
        const DmaArgs& d = in.dma;
        const size_t ch = size_t(std::min_element(dma_free.begin(), dma_free.end()) - dma_free.begin());
        const double dur = cost_.dma_cycles(d.rows, d.row_bytes);
        const double end = std::max(now, dma_free[ch]) + dur;
        dma_free[ch] = end;
        event_time[d.event] = std::max(event_time[d.event], end);
        rep.dma_busy_cycles += dur;
        rep.dma_transfers++;
        const uint64_t bytes = uint64_t(d.rows) * d.row_bytes;
        if (in.op == Opcode::kDmaLoad) {
          rep.dma_bytes_in += bytes;
          tcm_written({d.tcm, d.tcm + uint64_t(d.rows - 1) * d.tcm_stride + d.row_bytes});
        } else {
          rep.dma_bytes_out += bytes;
        }
        break;
      }
      case Opcode::kMma: {
        const MmaArgs& m = in.mma;
        Held& h = held[m.unit];
        const bool swap = !(h.valid && h.b == m.b && h.ldb == m.ldb && h.tb == m.tb);
        const double dur = cost_.tile_cycles(swap);
        mat_free[m.unit] = std::max(now, mat_free[m.unit]) + dur;
        rep.matrix_busy_cycles[m.unit] += dur;
        rep.mma_ops++;
        rep.stationary_swaps += swap ? 1 : 0;
        rep.flops += t_.tile_flops();
        tcm_written({m.c, m.c + uint64_t(T - 1) * m.ldc + row});  // may overwrite another array's B
        h = {true, m.b, m.ldb, m.tb, {m.b, m.b + uint64_t(T - 1) * m.ldb + row}};
        break;
      }
      case Opcode::kVec: {
        const VecArgs& v = in.vec;
        const double dur = cost_.vector_cycles(v.op, v.n);
        vec_free = std::max(now, vec_free) + dur;
        rep.vector_busy_cycles += dur;
        rep.vec_ops++;
        rep.vector_lane_ops += cost_.vector_lane_ops(v.op, v.n);
        tcm_written({v.dst, v.dst + vec_footprint(v.op, v.n).dst_bytes});
        break;
      }
      case Opcode::kSignal: {
        double t = now;
        if (in.sync.units & kUnitDma) t = std::max(t, *std::max_element(dma_free.begin(), dma_free.end()));
        if (in.sync.units & kUnitMatrix) t = std::max(t, *std::max_element(mat_free.begin(), mat_free.end()));
        if (in.sync.units & kUnitVector) t = std::max(t, vec_free);
        event_time[in.sync.event] = std::max(event_time[in.sync.event], t + cost_.signal_latency_cycles());
        break;
      }
      case Opcode::kWait: {
        const double t = event_time[in.sync.event];
        if (t > now) { rep.issue_stall_cycles += t - now; now = t; }
        break;
      }
      case Opcode::kBarrier: {
        double t = std::max(now, vec_free);
        t = std::max(t, *std::max_element(dma_free.begin(), dma_free.end()));
        t = std::max(t, *std::max_element(mat_free.begin(), mat_free.end()));
        if (t > now) { rep.issue_stall_cycles += t - now; now = t; }
        break;
      }
    }
  }
  if (opt.timing) {
    double end = std::max(now, vec_free);
    end = std::max(end, *std::max_element(dma_free.begin(), dma_free.end()));
    end = std::max(end, *std::max_element(mat_free.begin(), mat_free.end()));
    rep.total_cycles = end;
    rep.seconds = t_.seconds(end);
    rep.energy_j = cost_.energy_joules(rep.flops, rep.vector_lane_ops, double(rep.dma_bytes_in + rep.dma_bytes_out), rep.seconds);
  }
  return rep;
}

}  // namespace tandem::npu
