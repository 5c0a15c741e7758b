#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/memory_pool.h"

namespace tandem {
namespace {

TEST(MemoryPool, RegionsAreAlignedDisjointAndZeroed) {
  MemoryPool pool;
  const size_t a = pool.reserve("a", 10);
  const size_t b = pool.reserve("b", 100);
  const size_t c = pool.reserve("c", 64);
  ASSERT_TRUE(pool.allocate().ok());
  EXPECT_EQ(pool.region_count(), 3u);
  EXPECT_EQ(pool.total_bytes(), 64u + 128u + 64u);
  for (size_t h : {a, b, c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.get(h)) % MemoryPool::kAlignment, 0u);
  auto* pa = pool.get_as<unsigned char>(a);
  auto* pb = pool.get_as<unsigned char>(b);
  EXPECT_GE(pb, pa + 10);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(pb[i], 0);
  std::memset(pa, 0xff, 10);
  EXPECT_EQ(pb[0], 0);
}

TEST(MemoryPool, CountsTheSlotsReusedAcrossLayers) {
  MemoryPool pool;
  pool.reserve("x", 100, 22);
  pool.reserve("q", 200, 22);
  pool.reserve("k cache layer 0", 1000);
  pool.reserve("k cache layer 1", 1000);
  ASSERT_TRUE(pool.allocate().ok());
  EXPECT_EQ(pool.slot_count(), 2u);
  EXPECT_EQ(pool.slot_bytes(), 300u);
  EXPECT_EQ(pool.slot_layers(), 22);
  const std::string d = pool.describe();
  EXPECT_NE(d.find("x: 100 bytes (slot, reused by 22 layers)"), std::string::npos) << d;
  EXPECT_NE(d.find("2 activation slots (300 bytes) reused across 22 layers; 4 regions"), std::string::npos) << d;
  EXPECT_EQ(d.find("k cache layer 0: 1000 bytes (slot"), std::string::npos) << d;
}

}  // namespace
}  // namespace tandem
