// KV-cache layouts: addressing, the per-phase layout choice on the cost model, page size, and
// the append transfers run on the functional executor (checked byte for byte).
#include "npu/oplib/kv_cache.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tandem::npu::oplib {
namespace {

using tandem::npu::testing::target;

KvGeometry geometry(KvLayout layout, uint32_t capacity = 96, uint32_t heads = 3, uint32_t head_dim = 32,
                    uint32_t page = 16) {
  KvGeometry g;
  g.capacity = capacity;
  g.heads = heads;
  g.head_dim = head_dim;
  g.page_tokens = page;
  g.layout = layout;
  return g;
}

TEST(KvCache, AddressingOfBothLayouts) {
  const KvGeometry t = geometry(KvLayout::kTokenMajor), h = geometry(KvLayout::kHeadMajor);
  EXPECT_EQ(kv_offset(t, 5, 2), (5u * 96 + 2 * 32) * 2);
  EXPECT_EQ(kv_offset(h, 5, 2), (2u * 96 * 32 + 5 * 32) * 2);
  // The window an append touches ends inside the cache for an append at its last slot.
  for (const KvGeometry& g : {t, h})
    for (uint32_t rows : {1u, 7u, 40u}) EXPECT_LE(kv_offset(g, g.capacity - rows, 0) + kv_window_bytes(g, rows), g.bytes());
  EXPECT_EQ(kv_layout_from_name(kv_layout_name(KvLayout::kHeadMajor)), KvLayout::kHeadMajor);
  EXPECT_FALSE(kv_layout_from_name("column_major").has_value());
}

TEST(KvCache, AppendsLandWhereTheLayoutSays) {
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor})
    for (uint32_t rows : {1u, 16u, 37u}) {
      const KvGeometry g = geometry(layout);
      const Program p = kv_append_program(g, rows);
      ASSERT_TRUE(verify(p, target()).ok()) << verify(p, target()).message();
      // First token, last slot, and across a page boundary.
      for (uint32_t at : {0u, g.capacity - rows, std::min(g.capacity - rows, g.page_tokens - 1)}) {
        auto c = check_kv_append_program(p, g, rows, at, 7 + at, target());
        ASSERT_TRUE(c.ok()) << c.status().message();
        EXPECT_TRUE(c->ok()) << kv_layout_name(layout) << " rows " << rows << " at " << at << ": " << c->wrong
                             << " wrong, " << c->clobbered << " clobbered";
        EXPECT_EQ(c->written, uint64_t(rows) * g.row_bytes());
      }
    }
}

TEST(KvCache, CheckCatchesAProgramForTheOtherLayout) {
  const KvGeometry token = geometry(KvLayout::kTokenMajor), head = geometry(KvLayout::kHeadMajor);
  auto c = check_kv_append_program(kv_append_program(token, 16), head, 16, 0, 1, target());
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->ok());
  EXPECT_GT(c->wrong, 0u);
  EXPECT_GT(c->clobbered, 0u);
  // Out-of-range positions are refused, not run.
  EXPECT_FALSE(check_kv_append_program(kv_append_program(token, 16), token, 16, token.capacity - 15, 1, target()).ok());
}

TEST(KvCache, LayoutFollowsThePhaseTraffic) {
  const CostModel cost(target());
  KvGeometry g = geometry(KvLayout::kTokenMajor, 4096, 8, 64);
  g.page_tokens = choose_page_tokens(64, 4096, target());
  // Prefill: a long append and attention over the prompt. Decode: one row, attention over all.
  EXPECT_EQ(choose_kv_layout(g, 512, 512, cost), KvLayout::kTokenMajor);
  EXPECT_EQ(choose_kv_layout(g, 1, 4096, cost), KvLayout::kHeadMajor);
  // The choice is the cheaper of the two prices.
  for (auto [rows, ctx] : {std::pair{512u, 512u}, std::pair{1u, 4096u}, std::pair{64u, 1024u}}) {
    KvGeometry a = g, b = g;
    a.layout = KvLayout::kTokenMajor;
    b.layout = KvLayout::kHeadMajor;
    const KvLayout chosen = choose_kv_layout(g, rows, ctx, cost);
    const double ca = kv_phase_dma_cycles(a, rows, ctx, cost), cb = kv_phase_dma_cycles(b, rows, ctx, cost);
    EXPECT_EQ(chosen, cb < ca ? KvLayout::kHeadMajor : KvLayout::kTokenMajor);
  }
}

TEST(KvCache, PageIsTheSmallestThatHidesTheSetup) {
  const TargetModel& t = target();
  for (uint32_t hd : {32u, 64u, 128u}) {
    const uint32_t p = choose_page_tokens(hd, 1u << 16, t);
    auto transfer = [&](uint32_t tokens) { return double(tokens) * hd * 2 / t.dma_channel_bytes_per_cycle(); };
    EXPECT_GE(transfer(p), 10 * t.dma.setup_cycles) << hd;
    if (p > 16) {
      EXPECT_LT(transfer(p / 2), 10 * t.dma.setup_cycles) << hd;
    }
  }
  EXPECT_LE(choose_page_tokens(64, 40, t), 64u);  // never past the cache (rounded up to a power of two)
}

}  // namespace
}  // namespace tandem::npu::oplib
