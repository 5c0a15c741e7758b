// An npu that owns the KV keeps it as fp16 pages in the compiled layout; the cpu, hosting
// attention beside it, must write and read those pages exactly as it does its own fp32 caches.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/kv_layout.h"
#include "core/thread_pool.h"
#include "devices/cpu/attention.h"
#include "devices/cpu/ops.h"

namespace tandem {
namespace {

TEST(KvPages, CpuAttentionOverPagesMatchesTheHostLayout) {
  const int heads = 4, kv_heads = 2, hd = 16, context = 40, kv = kv_heads * hd, qd = heads * hd;
  ThreadPool pool(2);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  // Values fp16 holds exactly: both layouts then store the same numbers.
  auto fp16_values = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = fp16_to_f32(f32_to_fp16(nd(rng)));
    return v;
  };
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor})
    for (int window : {0, 5}) {
      const KvGeometry g{uint32_t(context), uint32_t(kv_heads), uint32_t(hd), 16, layout};
      std::vector<float> k_cache(size_t(context * kv)), v_cache(size_t(kv * context));
      std::vector<uint16_t> k_pages(size_t(g.bytes() / 2)), v_pages(size_t(g.bytes() / 2));
      int n_past = 0;
      for (int n : {7, 1, 3}) {  // a prompt, a decode step, a second chunk
        const std::vector<float> k = fp16_values(size_t(n * kv)), v = fp16_values(size_t(n * kv)),
                                 q = fp16_values(size_t(n * qd));
        cpu::kv_store(k.data(), kv, v.data(), kv, n, kv, k_cache.data(), v_cache.data(), context, n_past);
        cpu::kv_store_pages(k.data(), kv, v.data(), kv, n, g, k_pages.data(), v_pages.data(), n_past);
        const int64_t stride = int64_t(n) * (n_past + n);
        std::vector<float> scratch(size_t(stride * pool.size())), host(size_t(n * qd)), paged(size_t(n * qd));
        const cpu::AttentionScores how{0, 0, window};
        cpu::attention(pool, q.data(), qd, k_cache.data(), v_cache.data(), host.data(), qd, n, heads, kv_heads, hd, context,
                       n_past, how, scratch.data(), stride);
        cpu::attention_pages(pool, q.data(), qd, g, k_pages.data(), v_pages.data(), paged.data(), qd, n, heads, n_past, how,
                             scratch.data(), stride);
        for (size_t i = 0; i < host.size(); ++i)
          ASSERT_NEAR(paged[i], host[i], 1e-5f * std::max(1.0f, std::fabs(host[i])))
              << kv_layout_name(layout) << " window " << window << " n_past " << n_past << " at " << i;
        n_past += n;
      }
      // Every stored value sits where the layout's addressing says.
      for (uint32_t t = 0; t < uint32_t(n_past); ++t)
        for (uint32_t h = 0; h < g.heads; ++h)
          for (uint32_t d = 0; d < g.head_dim; ++d)
            ASSERT_EQ(fp16_to_f32(k_pages[kv_offset(g, t, h) / 2 + d]), k_cache[t * kv + h * hd + d]);
    }
}

}  // namespace
}  // namespace tandem
