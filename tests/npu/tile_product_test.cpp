// The matrix array's tile product gives the same bits on every host: the AVX2 version (separate
// multiply and add, no FMA) against the portable loop.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <vector>

#include "npu/kernels/tile_product.h"

namespace tandem::npu::kernels {
namespace {

TEST(TileProduct, Avx2MatchesPortableBitForBit) {
  if (!tile_product_avx2_available()) GTEST_SKIP() << "no AVX2 here";
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int T : {8, 16, 32, 40, 64}) {
    std::vector<float> a(size_t(T * T)), b(size_t(T * T)), want(size_t(T * T)), got(size_t(T * T), 99.0f);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    a[0] = 65504.0f;  // large magnitudes make any fused multiply-add show in the last bits
    b[1] = -1e-3f;
    tile_product_portable(a.data(), b.data(), want.data(), T);
    tile_product_avx2(a.data(), b.data(), got.data(), T);
    size_t differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += std::bit_cast<uint32_t>(want[i]) != std::bit_cast<uint32_t>(got[i]);
    EXPECT_EQ(differ, 0u) << "T=" << T;
  }
}

TEST(TileProduct, ComputesTheProduct) {
  const int T = 8;
  std::vector<float> a(64, 0.0f), b(64, 0.0f), out(64, -1.0f);
  for (int i = 0; i < T; ++i) a[size_t(i * T + i)] = 2.0f;  // 2 I
  for (int i = 0; i < 64; ++i) b[size_t(i)] = float(i);
  tile_product(a.data(), b.data(), out.data(), T);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[size_t(i)], 2.0f * float(i));
}

}  // namespace
}  // namespace tandem::npu::kernels
