// Properties of the cost model as seen through lowered operators (timing-only runs), and the
// modeled numbers next to the SEEDS profile points (printed, not asserted: they are predictions).
#include <gtest/gtest.h>

#include <cstdio>

#include "npu/cost_model.h"
#include "npu/executor.h"
#include "npu/oplib/matmul.h"
#include "test_util.h"

namespace tandem::npu {
namespace {

using oplib::MatmulOrder;
ExecReport time_matmul(uint32_t n, uint32_t in, uint32_t out, DType wt, MatmulOrder order = MatmulOrder::kActivationStationary,
                       bool dbl = true) {
  auto prog = oplib::lower_matmul({n, in, out, wt, order, dbl}, T());
  EXPECT_TRUE(prog.ok()) << prog.status().message();
  if (!prog.ok()) return {};
  auto r = Executor(T()).run(*prog, {false, true});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ExecReport{};
}
double us(uint32_t n, uint32_t in, uint32_t out, DType wt, MatmulOrder order = MatmulOrder::kActivationStationary, bool dbl = true) {
  return time_matmul(n, in, out, wt, order, dbl).seconds * 1e6;
}

TEST(CostModel, Primitives) {
  const CostModel cm(T());
  EXPECT_GT(cm.dma_cycles(1, 2048), cm.dma_cycles(1, 1024));
  EXPECT_GT(cm.dma_cycles(2, 1024), cm.dma_cycles(1, 2048));  // per-row cost
  EXPECT_EQ(cm.tile_stream_cycles(), 32);
  EXPECT_GT(cm.tile_cycles(true), cm.tile_cycles(false));
  EXPECT_GT(cm.vector_cycles(VecOp::kSilu, 4096), cm.vector_cycles(VecOp::kAdd, 4096));
  EXPECT_EQ(cm.vector_cycles(VecOp::kAdd, 1), cm.vector_cycles(VecOp::kAdd, T().vector_lanes_per_cycle()));
  EXPECT_EQ(CostModel::pipelined_cycles(10, 20, 5, 4, false), 140);
  EXPECT_EQ(CostModel::pipelined_cycles(10, 20, 5, 4, true), 10 + 3 * 20 + 20 + 5);
}

TEST(CostModel, LatencyIsAStepFunctionOfN) {
  // Compute-bound shape (q4_0 weights): every 32 rows is one more row of tiles.
  const double t256 = us(256, 2048, 2048, DType::Q4_0), t257 = us(257, 2048, 2048, DType::Q4_0),
               t288 = us(288, 2048, 2048, DType::Q4_0);
  EXPECT_NEAR(t257, t288, 0.02 * t288);
  EXPECT_GT(t257, 1.08 * t256);
  const double t33 = us(33, 4096, 4096, DType::F16), t64 = us(64, 4096, 4096, DType::F16);
  EXPECT_NEAR(t33, t64, 0.02 * t64);
}

TEST(CostModel, OrderExchangeBeatsNaiveOrder) {
  // NPU-2: [14336,4096]x[4096,K] (exchanged) vs [K,4096]x[4096,14336] (naive), W4A16.
  for (uint32_t k : {32u, 128u, 256u}) {
    const ExecReport ex = time_matmul(k, 4096, 14336, DType::Q4_0, MatmulOrder::kActivationStationary);
    const ExecReport nv = time_matmul(k, 4096, 14336, DType::Q4_0, MatmulOrder::kWeightStationary);
    std::printf("[order] K=%u exchanged %.1f us (%llu swaps) naive %.1f us (%llu swaps) ratio %.2f\n", k, ex.seconds * 1e6,
                (unsigned long long)ex.stationary_swaps, nv.seconds * 1e6, (unsigned long long)nv.stationary_swaps,
                nv.seconds / ex.seconds);
    EXPECT_LT(ex.seconds, nv.seconds) << "K=" << k;
    EXPECT_LT(ex.stationary_swaps, nv.stationary_swaps);
  }
  const ExecReport ex = time_matmul(256, 4096, 14336, DType::F16, MatmulOrder::kActivationStationary);
  const ExecReport nv = time_matmul(256, 4096, 14336, DType::F16, MatmulOrder::kWeightStationary);
  std::printf("[order] f16 K=256 exchanged %.1f us naive %.1f us ratio %.2f\n", ex.seconds * 1e6, nv.seconds * 1e6,
              nv.seconds / ex.seconds);
  EXPECT_LE(ex.seconds, nv.seconds);
}

TEST(CostModel, MoreColumnsThanRowsIsPenalized) {
  // NPU-3: FFN-down [4096, 14336] vs FFN-up [14336, 4096] at the same FLOPs: the long in-dim
  // halves the resident n-block (TCM), so the weights stream twice.
  for (DType wt : {DType::Q4_0, DType::F16}) {
    const double up = us(256, 4096, 14336, wt), down = us(256, 14336, 4096, wt);
    std::printf("[shape] %s n=256 up [14336,4096] %.1f us, down [4096,14336] %.1f us (down/up %.2f)\n",
                std::string(dtype_name(wt)).c_str(), up, down, down / up);
    EXPECT_GT(down, 1.02 * up);
  }
}

TEST(CostModel, DoubleBufferingLowersModeledTime) {
  for (DType wt : {DType::F16, DType::Q4_0}) {
    const double dbl = us(128, 4096, 4096, wt, MatmulOrder::kActivationStationary, true);
    const double single = us(128, 4096, 4096, wt, MatmulOrder::kActivationStationary, false);
    std::printf("[buffering] %s 4096x4096 n=128: double %.1f us, single %.1f us\n", std::string(dtype_name(wt)).c_str(), dbl,
                single);
    EXPECT_LT(dbl, 0.9 * single);
  }
}

TEST(CostModel, DmaBoundToComputeBoundCrossover) {
  // f16 weights 2048x2048 (8 MiB): small n is weight-DMA bound (flat in n); large n is compute
  // bound (linear in n).
  const ExecReport r1 = time_matmul(1, 2048, 2048, DType::F16), r32 = time_matmul(32, 2048, 2048, DType::F16);
  const ExecReport r512 = time_matmul(512, 2048, 2048, DType::F16), r1024 = time_matmul(1024, 2048, 2048, DType::F16);
  EXPECT_NEAR(r1.seconds, r32.seconds, 0.05 * r32.seconds);
  const double matrix1 = r1.matrix_busy_total() / T().matrix.arrays;
  EXPECT_LT(matrix1, 0.5 * r1.total_cycles);  // arrays mostly idle
  EXPECT_GT(r1.dma_busy_cycles / T().dma.channels, 0.8 * r1.total_cycles);
  EXPECT_GT(r1024.seconds / r512.seconds, 1.8);
  EXPECT_LT(r1024.seconds / r512.seconds, 2.2);
  EXPECT_GT(r1024.matrix_busy_total() / T().matrix.arrays, 0.6 * r1024.total_cycles);  // arrays mostly busy
}

TEST(CostModel, ModeledNumbersNextToSeedsProfilePoints) {
  std::printf("[target] %s: peak fp16 %.2f TFLOPS, DMA %.1f GB/s, TCM %llu B\n", T().name.c_str(),
              T().peak_fp16_flops() / 1e12, T().dma_bytes_per_s() / 1e9, (unsigned long long)T().tcm.bytes);
  struct Row { uint32_t out, in, n; double seeds_npu_us; };
  const Row rows[] = {{4096, 4096, 1, 693}, {4096, 4096, 128, 912}, {4096, 4096, 256, 1884}, {4096, 14336, 256, 23445},
                      {28672, 4096, 1, 3886}, {4096, 14336, 1, 6506}};
  for (const Row& r : rows)
    for (DType wt : {DType::F16, DType::Q8_0, DType::Q4_0}) {
      const ExecReport e = time_matmul(r.n, r.in, r.out, wt);
      std::printf("[seeds] W[%u,%u] n=%u %-5s modeled %8.1f us (SEEDS NPU %6.0f us) | %s\n", r.out, r.in, r.n,
                  std::string(dtype_name(wt)).c_str(), e.seconds * 1e6, r.seeds_npu_us, e.summary().c_str());
      EXPECT_GT(e.seconds, 0);
    }
}

}  // namespace
}  // namespace tandem::npu
