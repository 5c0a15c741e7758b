#include "npu/oplib/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "npu/executor.h"

namespace tandem::npu::oplib {

std::vector<KvTransfer> kv_store_transfers(const KvGeometry& g, uint32_t first, uint32_t count) {
  const uint32_t hd_bytes = g.head_dim * 2, row = uint32_t(g.row_bytes());
  if (g.layout == KvLayout::kTokenMajor)  // the page's rows are contiguous on both sides
    return {{kv_offset(g, first, 0), uint64_t(count) * row, 1, count * row, 0, count * row}};
  if (count == 1)  // one token: its head slices are capacity apart in DDR, adjacent in TCM
    return {{kv_offset(g, first, 0), uint64_t(g.capacity) * hd_bytes, g.heads, hd_bytes, 0, hd_bytes}};
  std::vector<KvTransfer> out;
  for (uint32_t h = 0; h < g.heads; ++h)  // each head's tokens contiguous in DDR, strided in TCM
    out.push_back({kv_offset(g, first, h), hd_bytes, count, hd_bytes, h * hd_bytes, row});
  return out;
}

Program kv_append_program(const KvGeometry& g, uint32_t rows) {
  Program p;
  p.name = "kv_append";
  p.add_buffer("rows", uint64_t(rows) * g.row_bytes(), false);
  p.add_buffer("cache", kv_window_bytes(g, rows), true);
  p.num_events = 2;
  for (uint32_t first = 0; first < rows; first += g.page_tokens) {
    const uint32_t n = std::min(g.page_tokens, rows - first);
    const uint32_t bytes = uint32_t(n * g.row_bytes());
    p.emit(Instr::dma_load({0, first * g.row_bytes(), bytes, 1, bytes, 0, bytes, 0}));
    p.emit(Instr::wait(0));
    for (const KvTransfer& s : kv_store_transfers(g, first, n))
      p.emit(Instr::dma_store({1, s.ddr_offset, s.ddr_stride, s.rows, s.row_bytes, s.tcm_offset, s.tcm_stride, 1}));
    p.emit(Instr::wait(1));
  }
  return p;
}

double kv_phase_dma_cycles(const KvGeometry& g, uint32_t rows, uint32_t context, const CostModel& cost) {
  const uint32_t page = std::max<uint32_t>(1, g.page_tokens);
  double cycles = 0;
  for (uint32_t first = 0; first < rows; first += page) {
    const uint32_t n = std::min(page, rows - first);
    cycles += cost.dma_cycles(1, uint64_t(n) * g.row_bytes());  // staging load of the page
    for (const KvTransfer& s : kv_store_transfers(g, first, n)) cycles += cost.dma_cycles(s.rows, s.row_bytes);
  }
  const uint64_t hd_bytes = uint64_t(g.head_dim) * 2;
  for (uint32_t first = 0; first < context; first += page) {
    const uint32_t n = std::min(page, context - first);
    // One head's page: n strided rows (token_major) or one contiguous run (head_major).
    cycles += g.heads * (g.layout == KvLayout::kTokenMajor ? cost.dma_cycles(n, hd_bytes) : cost.dma_cycles(1, n * hd_bytes));
  }
  return cycles;
}

KvLayout choose_kv_layout(KvGeometry g, uint32_t rows, uint32_t context, const CostModel& cost) {
  g.layout = KvLayout::kTokenMajor;
  const double token = kv_phase_dma_cycles(g, rows, context, cost);
  g.layout = KvLayout::kHeadMajor;
  const double head = kv_phase_dma_cycles(g, rows, context, cost);
  return head < token ? KvLayout::kHeadMajor : KvLayout::kTokenMajor;
}

uint32_t choose_page_tokens(uint32_t head_dim, uint32_t capacity, const TargetModel& t) {
  uint32_t cap = 16;
  while (cap < capacity) cap *= 2;
  const double setup = t.dma.setup_cycles;
  uint32_t p = 16;
  while (p < cap && double(p) * head_dim * 2 / t.dma_channel_bytes_per_cycle() < 10 * setup) p *= 2;
  return p;
}

Result<KvAppendCheck> check_kv_append_program(const Program& program, const KvGeometry& g, uint32_t rows,
                                              uint32_t position, uint64_t seed, const TargetModel& t) {
  if (rows == 0 || uint64_t(position) + rows > g.capacity)
    return InvalidArgument("kv append check: " + std::to_string(rows) + " rows at position " + std::to_string(position) +
                           " do not fit a cache of " + std::to_string(g.capacity) + " tokens");
  if (program.buffers.size() != 2)
    return InvalidArgument("kv append check: program " + program.name + " declares " +
                           std::to_string(program.buffers.size()) + " buffers, expected 2 (rows, cache window)");
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> fresh(size_t(rows) * g.width());
  for (auto& v : fresh) v = uint16_t(rng());
  std::vector<uint8_t> cache(g.bytes()), before;
  for (size_t i = 0; i < cache.size(); ++i) cache[i] = uint8_t(0xA5 ^ (i * 131));
  before = cache;
  const uint64_t window = kv_offset(g, position, 0);
  Executor ex(t);
  ex.bind_const(0, fresh.data(), fresh.size() * 2);
  ex.bind(1, cache.data() + window, cache.size() - window);
  auto run = ex.run(program);
  if (!run.ok()) return run.status();
  // Expected: every appended (token, head) slice holds its new values, nothing else changed.
  std::vector<uint8_t> expect = before;
  const size_t hd_bytes = size_t(g.head_dim) * 2;
  KvAppendCheck c;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t h = 0; h < g.heads; ++h) {
      std::memcpy(&expect[kv_offset(g, position + r, h)], &fresh[(size_t(r) * g.heads + h) * g.head_dim], hd_bytes);
      c.written += hd_bytes;
    }
  std::vector<bool> target(cache.size(), false);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t h = 0; h < g.heads; ++h)
      std::fill_n(target.begin() + ptrdiff_t(kv_offset(g, position + r, h)), hd_bytes, true);
  for (size_t i = 0; i < cache.size(); ++i)
    if (cache[i] != expect[i]) ++(target[i] ? c.wrong : c.clobbered);
  return c;
}

}  // namespace tandem::npu::oplib
