// The Executor's timing semantics on hand-written programs.
#include <gtest/gtest.h>

#include "npu/executor.h"
#include "test_util.h"

namespace tandem::npu {
namespace {

Program base(uint32_t events) {
  Program p;
  p.name = std::string("timing");
  p.add_buffer("x", 1 << 20, false);
  p.num_events = events;
  return p;
}

MmaArgs tile(uint32_t unit, uint32_t b) { return {unit, 0, 64, b, 64, 8192, 64, false, false, false}; }

TEST(ExecutorTiming, DmaOverlapsMatrixUnlessAWaitOrdersThem) {
  const CostModel cm(T());
  const double dma = cm.dma_cycles(256, 4096);
  // Independent: DMA on a channel while 4 tile ops (one swap) run on array 0.
  Program p = base(1);
  p.emit(Instr::dma_load({0, 0, 4096, 256, 4096, 1 << 20, 4096, 0}));
  for (int i = 0; i < 4; ++i) p.emit(Instr::matmul(tile(0, 2048)));
  auto r = Executor(T()).run(p, {false, true});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stationary_swaps, 1u);
  EXPECT_NEAR(r->matrix_busy_cycles[0], 4 * cm.tile_stream_cycles() + cm.stationary_swap_cycles(), 1e-9);
  EXPECT_LT(r->total_cycles, dma + r->matrix_busy_cycles[0]);
  EXPECT_GE(r->total_cycles, dma);
  // Ordered: wait for the DMA before the tile ops.
  Program q = base(1);
  q.emit(Instr::dma_load({0, 0, 4096, 256, 4096, 1 << 20, 4096, 0}));
  q.emit(Instr::wait(0));
  for (int i = 0; i < 4; ++i) q.emit(Instr::matmul(tile(0, 2048)));
  auto s = Executor(T()).run(q, {false, true});
  ASSERT_TRUE(s.ok());
  EXPECT_GE(s->total_cycles, dma + s->matrix_busy_cycles[0]);
  EXPECT_GT(s->issue_stall_cycles, 0);
}

TEST(ExecutorTiming, HeldOperandSwapsWhenBChangesOrIsOverwritten) {
  Program p = base(1);
  p.emit(Instr::matmul(tile(0, 2048)));
  p.emit(Instr::matmul(tile(0, 2048)));  // same B: no swap
  p.emit(Instr::matmul(tile(0, 4096)));  // other B: swap
  p.emit(Instr::matmul(tile(1, 4096)));  // other array: its own swap
  p.emit(Instr::dma_load({0, 0, 0, 1, 64, 4096, 0, 0}));  // overwrites array 0's B
  p.emit(Instr::wait(0));
  p.emit(Instr::matmul(tile(0, 4096)));  // must reload
  auto r = Executor(T()).run(p, {false, true});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->mma_ops, 5u);
  EXPECT_EQ(r->stationary_swaps, 4u);
}

TEST(ExecutorTiming, ArraysRunConcurrentlyAndSignalWaitsForThem) {
  const CostModel cm(T());
  Program p = base(1);
  for (uint32_t u = 0; u < uint32_t(T().matrix.arrays); ++u) p.emit(Instr::matmul(tile(u, 2048)));
  p.emit(Instr::signal(0, kUnitMatrix));
  p.emit(Instr::wait(0));
  auto r = Executor(T()).run(p, {false, true});
  ASSERT_TRUE(r.ok());
  // All arrays in parallel: about one tile time, not `arrays` of them.
  EXPECT_LT(r->total_cycles, 2 * cm.tile_cycles(true) + 100);
  EXPECT_GE(r->total_cycles, cm.tile_cycles(true) + cm.signal_latency_cycles());
  EXPECT_GT(r->energy_j, 0);
  EXPECT_NEAR(r->flops, T().matrix.arrays * T().tile_flops(), 1e-6);
}

}  // namespace
}  // namespace tandem::npu
