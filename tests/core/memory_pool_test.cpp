#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "runtime/memory_pool.h"

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

}  // namespace
}  // namespace tandem
