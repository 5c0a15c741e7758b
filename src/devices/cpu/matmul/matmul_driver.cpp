// Splits a matmul over the thread pool and walks the cache blocks; the arithmetic lives in the
// per-ISA kernel tables. Compiled with baseline flags (see matmul_internal.h).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "core/thread_pool.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu::detail {

namespace {
// Calls run(target, begin, end) for every piece of [0, total) (the targets' units laid end to end:
// groups of rows) that the threads take from a shared counter. A chunk that crosses from one
// target into the next is cut at the boundary, so a piece never spans two. A chunk is a
// contiguous run of one weight's rows: one stream for the hardware prefetcher, little false
// sharing on y.
//
// Chunks shrink as the work runs out (guided self-scheduling): each take is half of what is left
// per thread, at least `min_chunk` units. Equal chunks of an eighth per thread left the faster
// thread waiting for the other's last chunk -- half a chunk on average, up to 40 us of a 5632-row
// Q4_0 gate/up pair -- while the first, large takes keep the streams long (a quarter of what is
// left per thread made more, shorter streams and ran slower). One thread takes everything at once.
template <class Run>
void share_units(ThreadPool& pool, const int64_t* units, size_t n_targets, int64_t min_chunk, Run&& run) {
  int64_t total = 0;
  for (size_t i = 0; i < n_targets; ++i) total += units[i];
  std::atomic<int64_t> next{0};
  pool.run([&](int, int nth) {
    int64_t g0 = next.load(std::memory_order_relaxed);
    while (g0 < total) {
      const int64_t want = nth == 1 ? total : std::max(min_chunk, (total - g0) / (2 * int64_t(nth)));
      const int64_t g1 = std::min(total, g0 + want);
      if (!next.compare_exchange_weak(g0, g1, std::memory_order_relaxed)) continue;  // g0 now holds the new value
      int64_t base = 0;
      for (size_t t = 0; t < n_targets && base < g1; base += units[t], ++t) {
        const int64_t b = std::max(g0, base) - base, e = std::min(g1, base + units[t]) - base;
        if (b < e) run(t, b, e);
      }
      g0 = next.load(std::memory_order_relaxed);
    }
  });
}

// The smallest take, in 4-row units (16 rows, 64 KB of fp32 at 1024 columns) and in 16-row packed
// groups (2: 36 KB of Q4_0 at 2048 columns): the last takes bound how long one thread waits.
constexpr int64_t kMinRowUnits = 4;
constexpr int64_t kMinPackedGroups = 2;
}  // namespace

PackedKernelFn packed_kernel_for(const PackedDecodeKernels& k, DType t) {
  for (const auto& e : k.kernels)
    if (e.type == t) return e.fn;
  // pack_for_decode packs only the types of the table (can_pack_for_decode): a bug, not input.
  std::fprintf(stderr, "tandem: internal error: no packed decode kernel for %.*s\n", int(dtype_name(t).size()), dtype_name(t).data());
  std::abort();
}

void run_gemv(ThreadPool& pool, const MatmulArgs& a, GemvFn fn) { run_gemv_group(pool, {&a, 1}, &fn); }

void run_gemv_group(ThreadPool& pool, std::span<const MatmulArgs> targets, const GemvFn* fns) {
  // Units of 4 rows: chunk bounds stay multiples of 4 within a weight, so the kernel keeps its
  // 4-rows-per-pass blocking except in a weight's very last rows.
  int64_t units[kMaxGroup], total = 0;
  for (size_t t = 0; t < targets.size(); ++t) total += units[t] = (targets[t].w.rows + 3) / 4;
  share_units(pool, units, targets.size(), kMinRowUnits, [&](size_t t, int64_t b, int64_t e) {
    const int64_t rows = targets[t].w.rows;
    fns[t](targets[t], std::min(rows, b * 4), std::min(rows, e * 4));
  });
}

void run_gemv_dequantized(ThreadPool& pool, const MatmulArgs& a, GemvFn f32_gemv) {
  // Tiles of 4 rows (the f32 kernel's blocking), dequantized into the thread's scratch: the decode
  // costs a scalar pass over the weights, which dominates; these types are here to be correct.
  constexpr int64_t kTile = 4;
  const int64_t units[1] = {(a.w.rows + kTile - 1) / kTile};
  share_units(pool, units, 1, kMinRowUnits, [&](size_t, int64_t b, int64_t e) {
    float* rows = static_cast<float*>(thread_scratch(kScratchRows, size_t(kTile * a.w.cols) * sizeof(float)));
    for (int64_t u = b; u < e; ++u) {
      const int64_t r0 = u * kTile, n = std::min(kTile, a.w.rows - r0);
      for (int64_t r = 0; r < n; ++r) dequantize_range(a.w, r0 + r, 0, a.w.cols, rows + r * a.w.cols);
      const WeightView tile{DType::F32, rows, n, a.w.cols, size_t(a.w.cols) * sizeof(float)};
      f32_gemv(MatmulArgs{tile, a.x, a.m, a.ldx, a.y + r0, a.ldy}, 0, n);
    }
  });
}

void run_packed_gemv(ThreadPool& pool, const MatmulArgs& a, const PackedDecodeKernels& k) {
  run_packed_gemv_group(pool, {&a, 1}, k);
}

void run_packed_gemv_group(ThreadPool& pool, std::span<const MatmulArgs> targets, const PackedDecodeKernels& k) {
  const MatmulArgs& a = targets[0];
  // The caller quantizes the activations once (a few microseconds for m = 1) and the threads share
  // them; the pool's start is the barrier.
  const int64_t blocks = a.w.cols / 32;
  const size_t q_bytes = size_t(a.m * a.w.cols), s_bytes = size_t(a.m * blocks) * 4;
  char* scratch = static_cast<char*>(thread_scratch(kScratchQuantX, q_bytes + 3 * s_bytes + 64));
  int8_t* xq = reinterpret_cast<int8_t*>(scratch);
  float* xd = reinterpret_cast<float*>(scratch + (q_bytes + 63) / 64 * 64);
  int32_t* xs = reinterpret_cast<int32_t*>(xd + a.m * blocks);
  int32_t* xs_lo = xs + a.m * blocks;
  k.quantize(a.x, a.ldx, a.m, a.w.cols, xq, xd, xs, xs_lo);
  PackedGemvArgs args[kMaxGroup];
  int64_t units[kMaxGroup], total = 0;
  for (size_t t = 0; t < targets.size(); ++t) {
    const MatmulArgs& ta = targets[t];
    args[t] = {ta.w.packed, ta.w.packed_row0 / PackedWeight::kRows, ta.w.rows, ta.m, xq, ta.w.cols, xd, xs, ta.y, ta.ldy, xs_lo};
    total += units[t] = (ta.w.rows + PackedWeight::kRows - 1) / PackedWeight::kRows;  // 16-row groups
  }
  // A chunk is one sequential stream.
  const auto fn = packed_kernel_for(k, a.w.packed->type);
  share_units(pool, units, targets.size(), kMinPackedGroups,
              [&](size_t t, int64_t b, int64_t e) { fn(args[t], b, e); });
}

void run_packed_gemm(ThreadPool& pool, const MatmulArgs& a, const PackedDecodeKernels& k) {
  const PackedWeight& w = *a.w.packed;
  const int64_t blocks = a.w.cols / 32;
  const size_t q_bytes = size_t(a.m * a.w.cols), s_bytes = size_t(a.m * blocks) * 4;
  char* scratch = static_cast<char*>(thread_scratch(kScratchQuantX, q_bytes + 3 * s_bytes + 64));
  int8_t* xq = reinterpret_cast<int8_t*>(scratch);
  float* xd = reinterpret_cast<float*>(scratch + (q_bytes + 63) / 64 * 64);
  int32_t* xs = reinterpret_cast<int32_t*>(xd + a.m * blocks);
  int32_t* xs_lo = xs + a.m * blocks;
  // Every thread quantizes a share of the activation rows; the pool's join is the barrier.
  pool.run([&](int ith, int nth) {
    const int64_t i0 = a.m * ith / nth, i1 = a.m * (ith + 1) / nth;
    if (i0 < i1)
      k.quantize(a.x + i0 * a.ldx, a.ldx, i1 - i0, a.w.cols, xq + i0 * a.w.cols, xd + i0 * blocks, xs + i0 * blocks,
                 xs_lo + i0 * blocks);
  });
  const auto fn = packed_kernel_for(k, w.type);
  // A thread takes a chunk of 16-row groups small enough to stay in L2 (~256 KB) and runs every
  // tile of kDecodeMaxRows activation rows against it: the weights come from memory once per
  // call, and each tile is the decode kernel's (m <= 8) register blocking.
  const int64_t groups = (a.w.rows + PackedWeight::kRows - 1) / PackedWeight::kRows;
  const int64_t nth = int64_t(pool.size());
  const int64_t fit = std::max<int64_t>(1, int64_t((size_t(256) << 10) / w.group_bytes));
  const int64_t chunk = std::max<int64_t>(1, std::min(fit, (groups + nth - 1) / nth));
  const int64_t group0 = a.w.packed_row0 / PackedWeight::kRows;
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    for (int64_t g0; (g0 = next.fetch_add(chunk, std::memory_order_relaxed)) < groups;) {
      const int64_t g1 = std::min(groups, g0 + chunk);
      for (int64_t i = 0; i < a.m; i += kGemvMaxM) {
        const int64_t tile = std::min(kGemvMaxM, a.m - i);
        const PackedGemvArgs args{&w,           group0,       a.w.rows,          tile, xq + i * a.w.cols, a.w.cols,
                                  xd + i * blocks, xs + i * blocks, a.y + i * a.ldy, a.ldy, xs_lo + i * blocks};
        fn(args, g0, g1);
      }
    }
  });
}

void run_gemm(ThreadPool& pool, const MatmulArgs& a, const GemmKernels& k) {
  const int64_t cols = a.w.cols;
  const int64_t kpad = (cols + k.k_align - 1) / k.k_align * k.k_align;
  const int64_t m_blocks = (a.m + k.mr - 1) / k.mr;
  const size_t x_block_bytes = size_t(k.mr) * size_t(kpad) * size_t(k.a_bytes);
  // Packed activations are shared: the caller (thread 0) owns the buffer, every thread packs a
  // share of the row blocks, and the pool's join is the barrier before the multiply.
  char* packed_x = static_cast<char*>(thread_scratch(kScratchPackedX, x_block_bytes * size_t(m_blocks)));
  pool.run([&](int ith, int nth) {
    for (int64_t b = ith; b < m_blocks; b += nth) {
      const int rows = int(std::min<int64_t>(k.mr, a.m - b * k.mr));
      k.pack_x(a.x + b * k.mr * a.ldx, a.ldx, rows, cols, kpad, packed_x + size_t(b) * x_block_bytes);
    }
  });

  // Threads take contiguous runs of NR-row weight blocks (each thread dequantizes only its own
  // weights, once per k block). When there are fewer weight blocks than threads (tiny W, long
  // prompt) the activation blocks are split as well.
  const int64_t n_blocks = (a.w.rows + k.nr - 1) / k.nr;
  pool.run([&](int ith, int nth) {
    const int64_t tn = std::min<int64_t>(nth, n_blocks);
    const int64_t tm = std::max<int64_t>(1, std::min<int64_t>(nth / tn, m_blocks));
    if (ith >= tn * tm) return;
    const int64_t in = ith % tn, im = ith / tn;
    const int64_t nb0 = n_blocks * in / tn, nb1 = n_blocks * (in + 1) / tn;
    const int64_t mb0 = m_blocks * im / tm, mb1 = m_blocks * (im + 1) / tm;
    if (nb0 >= nb1 || mb0 >= mb1) return;
    if (k.enter) k.enter();

    const int sub_per_panel = std::max(1, k.nc / k.nr);
    const size_t sub_bytes = size_t(k.nr) * size_t(k.kc) * size_t(k.b_bytes);
    char* panel = static_cast<char*>(thread_scratch(kScratchPanel, sub_bytes * size_t(sub_per_panel)));
    const size_t scales_per_sub = size_t(k.nr) * size_t((k.kc + 31) / 32);
    float* scales = k.scaled ? static_cast<float*>(thread_scratch(kScratchScales, scales_per_sub * sizeof(float) * size_t(sub_per_panel)))
                             : nullptr;

    // Loop order: k blocks outermost so a packed panel (nc rows x kc columns, sized for L2) is
    // dequantized once and then reused by every activation block; the activation block slice
    // (mr x kc) stays in L1 while it sweeps the panel's sub-panels.
    for (int64_t k0 = 0; k0 < kpad; k0 += k.kc) {
      const int64_t kc = std::min<int64_t>(k.kc, kpad - k0);
      for (int64_t nb = nb0; nb < nb1; nb += sub_per_panel) {
        const int64_t nsub = std::min<int64_t>(sub_per_panel, nb1 - nb);
        for (int64_t s = 0; s < nsub; ++s) {
          const int64_t r0 = (nb + s) * k.nr;
          const int rows = int(std::min<int64_t>(k.nr, a.w.rows - r0));
          k.pack_panel(a.w, r0, rows, k0, kc, panel + size_t(s) * sub_bytes,
                       scales ? scales + size_t(s) * scales_per_sub : nullptr);
        }
        for (int64_t mb = mb0; mb < mb1; ++mb) {
          const int mr_valid = int(std::min<int64_t>(k.mr, a.m - mb * k.mr));
          const char* xa = packed_x + size_t(mb) * x_block_bytes + size_t(k0) * size_t(k.mr) * size_t(k.a_bytes);
          for (int64_t s = 0; s < nsub; ++s) {
            const int64_t r0 = (nb + s) * k.nr;
            const int nr_valid = int(std::min<int64_t>(k.nr, a.w.rows - r0));
            k.micro(mr_valid, xa, panel + size_t(s) * sub_bytes, scales ? scales + size_t(s) * scales_per_sub : nullptr,
                    kc, a.y + mb * k.mr * a.ldy + r0, a.ldy, nr_valid, k0 > 0);
          }
        }
      }
    }
    if (k.leave) k.leave();
  });
}

}  // namespace tandem::cpu::detail
