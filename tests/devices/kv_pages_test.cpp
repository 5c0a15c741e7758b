// A typed KV cache (f32, f16 or q8_0 keys and values, token- or head-major: the --cache-type
// flags' rows, or the fp16 pages an npu owns) must hold what was stored where kv_offset says, and
// the cpu's attention over it must equal its attention over the host fp32 layout holding the
// same numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/kv_layout.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "devices/cpu/attention.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/ops.h"

namespace tandem {
namespace {

// Element d of (token, head) in a typed cache, as fp32.
float cached(const KvGeometry& g, const std::vector<uint8_t>& cache, uint32_t t, uint32_t h, uint32_t d) {
  const uint8_t* p = cache.data() + kv_offset(g, t, h);
  switch (g.type) {
    case DType::F16: {
      fp16_t x;
      std::memcpy(&x, p + 2 * d, 2);
      return fp16_to_f32(x);
    }
    case DType::Q8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(p) + d / 32;
      return fp16_to_f32(b->d) * float(b->qs[d % 32]);
    }
    default: {
      float x;
      std::memcpy(&x, p + 4 * d, 4);
      return x;
    }
  }
}

// How far a stored element may be from the value given: exact for f32, fp16 rounding, and for
// q8_0 half a step of its block (step d = the largest |x| of 32 over 127) plus the step's own fp16
// rounding times up to 127 steps (127 x 2^-11 d).
float store_tolerance(DType t, float x, float block_max) {
  if (t == DType::F32) return 0.0f;
  if (t == DType::F16) return std::max(std::fabs(x) * 0x1p-11f, 0x1p-25f);  // subnormals: half of 2^-24
  return block_max / 127.0f * (0.5f + 127.0f * 0x1p-11f) * 1.001f;
}

// n draws of a standard normal, from one seeded stream.
struct NormalValues {
  std::mt19937 rng;
  std::normal_distribution<float> nd{};
  std::vector<float> operator()(size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
  }
};

// The cpu's attention of n query rows (heads of g.head_dim) over the typed pages equals its
// attention over the host fp32 layout holding the same numbers (2e-5 relative).
void expect_pages_match_host(ThreadPool& pool, const std::vector<float>& q, const std::vector<float>& k_cache,
                             const std::vector<float>& v_cache, const KvGeometry& g,
                             const std::vector<uint8_t>& k_pages, const std::vector<uint8_t>& v_pages, int n, int heads,
                             int context, int n_past, const cpu::AttentionScores& how, const std::string& what) {
  const int hd = int(g.head_dim), qd = heads * hd;
  const int64_t stride = int64_t(n) * (n_past + n);
  std::vector<float> scratch(size_t(stride * pool.size())), host(size_t(n * qd)), paged(size_t(n * qd));
  cpu::attention(pool, q.data(), qd, k_cache.data(), v_cache.data(), host.data(), qd, n, heads, int(g.heads), hd,
                 context, n_past, how, scratch.data(), stride);
  cpu::attention_pages(pool, q.data(), qd, g, k_pages.data(), v_pages.data(), paged.data(), qd, n, heads, n_past, how);
  for (size_t i = 0; i < host.size(); ++i)
    ASSERT_NEAR(paged[i], host[i], 2e-5f * std::max(1.0f, std::fabs(host[i])))
        << what << " n " << n << " n_past " << n_past << " at " << i;
}

struct Case {
  DType k, v;
  KvLayout layout;
};

TEST(KvPages, CpuAttentionOverTypedCachesMatchesTheHostLayout) {
  // Scores' GEMM in fp32 (the default rounds activations to bf16 where the keys are q8_0): the
  // comparison is of the cache paths, not of the prefill arithmetic.
  const cpu::GemmPrecision saved = cpu::gemm_precision();
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  const int heads = 8, kv_heads = 2, hd = 64, context = 48, kv = kv_heads * hd, qd = heads * hd;
  ThreadPool pool(2);
  NormalValues values{std::mt19937(3)};
  std::vector<Case> cases;
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor})
    for (auto [k, v] : {std::pair{DType::F32, DType::F32}, std::pair{DType::F16, DType::F16},
                        std::pair{DType::Q8_0, DType::Q8_0}, std::pair{DType::F16, DType::Q8_0},
                        std::pair{DType::Q8_0, DType::F32}})
      cases.push_back({k, v, layout});
  for (const Case& c : cases)
    for (const cpu::AttentionScores how : {cpu::AttentionScores{0, 0, 0}, cpu::AttentionScores{0, 0, 5},
                                           cpu::AttentionScores{0.2f, 30.0f, 0}}) {
      const KvGeometry g{uint32_t(context), uint32_t(kv_heads), uint32_t(hd), 16, c.layout, c.k, c.v};
      const KvGeometry gv = g.values();
      const std::string what = std::string(kv_layout_name(c.layout)) + " " + std::string(dtype_name(c.k)) + "/" +
                               std::string(dtype_name(c.v)) + " window " + std::to_string(how.window) + " softcap " +
                               std::to_string(how.softcap);
      std::vector<uint8_t> k_pages(g.bytes()), v_pages(gv.bytes());
      std::vector<float> k_cache(size_t(context * kv)), v_cache(size_t(kv * context));
      int n_past = 0;
      // A prompt, a decode step, a chunk of 3 (summed row by row) and one of 12 (8 query heads
      // per KV head x 12 rows: the transposed-values GEMM).
      for (int n : {7, 1, 3, 12}) {
        const std::vector<float> k = values(size_t(n * kv)), v = values(size_t(n * kv)), q = values(size_t(n * qd));
        cpu::kv_store_pages(k.data(), kv, v.data(), kv, n, g, k_pages.data(), v_pages.data(), n_past);
        // The host layout holds exactly what the typed cache holds; each stored element is the
        // value given, to within its type's rounding.
        for (int i = 0; i < n; ++i)
          for (uint32_t h = 0; h < g.heads; ++h) {
            float k_max = 0, v_max = 0;
            for (uint32_t d = 0; d < hd; ++d) {
              if (d % 32 == 0) k_max = v_max = 0;
              for (uint32_t e = d / 32 * 32; e < d / 32 * 32 + 32; ++e) {
                k_max = std::max(k_max, std::fabs(k[size_t(i * kv) + h * hd + e]));
                v_max = std::max(v_max, std::fabs(v[size_t(i * kv) + h * hd + e]));
              }
              const uint32_t t = uint32_t(n_past + i), col = h * hd + d;
              const float ks = cached(g, k_pages, t, h, d), vs = cached(gv, v_pages, t, h, d);
              const float kx = k[size_t(i * kv) + col], vx = v[size_t(i * kv) + col];
              ASSERT_LE(std::fabs(ks - kx), store_tolerance(c.k, kx, k_max)) << what << " key " << t << "," << col;
              ASSERT_LE(std::fabs(vs - vx), store_tolerance(c.v, vx, v_max)) << what << " value " << t << "," << col;
              k_cache[size_t(t) * kv + col] = ks;
              v_cache[size_t(col) * context + t] = vs;
            }
          }
        ASSERT_NO_FATAL_FAILURE(expect_pages_match_host(pool, q, k_cache, v_cache, g, k_pages, v_pages, n, heads,
                                                        context, n_past, how, what));
        n_past += n;
      }
    }
  cpu::set_gemm_precision(saved);
}

// Long caches (attention.cpp). Decode with fewer KV heads than threads splits each head's keys
// into segments: one KV head on 4 threads (3 segments of the 1000 cached keys), two on 3 threads.
// One thread keeps the unsplit path. A sliding window starts every unit's keys at its first
// query's window: 300 keys (too few to split: the unsplit path from a later key) and 700 (split in
// 2 where threads allow); scale and softcap; a decode step, a chunk of 2 rows (summed row by row)
// and one of 20 (the transposed-values GEMM on 1 thread).
TEST(KvPages, LongCachesSplitOrWindowedMatchTheHostLayout) {
  // The 20-row chunk's GEMMs in fp32, as in the test above.
  const cpu::GemmPrecision saved = cpu::gemm_precision();
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  const int hd = 64, context = 1100, past = 1000;
  NormalValues values{std::mt19937(5)};
  for (auto [kv_heads, threads] : {std::pair{1, 4}, std::pair{2, 3}, std::pair{1, 1}})
    for (DType t : {DType::F16, DType::F32, DType::Q8_0})
      for (const cpu::AttentionScores how : {cpu::AttentionScores{0, 0, 0}, cpu::AttentionScores{0, 0, 300},
                                             cpu::AttentionScores{0, 0, 700}, cpu::AttentionScores{0.2f, 30.0f, 0}}) {
        const int heads = 4 * kv_heads, kv = kv_heads * hd, qd = heads * hd;
        ThreadPool pool(threads);
        const KvGeometry g{uint32_t(context), uint32_t(kv_heads), uint32_t(hd), 16, KvLayout::kHeadMajor, t, t};
        const KvGeometry gv = g.values();
        const std::string what = std::to_string(kv_heads) + " KV heads, " + std::to_string(threads) + " threads, " +
                                 std::string(dtype_name(t)) + " window " + std::to_string(how.window) + " softcap " +
                                 std::to_string(how.softcap);
        std::vector<uint8_t> k_pages(g.bytes()), v_pages(gv.bytes());
        std::vector<float> k_cache(size_t(context * kv)), v_cache(size_t(kv * context));
        int n_past = 0;
        for (int n : {past, 1, 2, 20}) {
          const std::vector<float> k = values(size_t(n * kv)), v = values(size_t(n * kv)), q = values(size_t(n * qd));
          cpu::kv_store_pages(k.data(), kv, v.data(), kv, n, g, k_pages.data(), v_pages.data(), n_past);
          for (int i = 0; i < n; ++i)
            for (uint32_t h = 0; h < g.heads; ++h)
              for (uint32_t d = 0; d < hd; ++d) {
                const uint32_t pos = uint32_t(n_past + i), col = h * hd + d;
                k_cache[size_t(pos) * kv + col] = cached(g, k_pages, pos, h, d);
                v_cache[size_t(col) * context + pos] = cached(gv, v_pages, pos, h, d);
              }
          if (n_past > 0) {  // the long prompt only fills the cache
            ASSERT_NO_FATAL_FAILURE(expect_pages_match_host(pool, q, k_cache, v_cache, g, k_pages, v_pages, n, heads,
                                                            context, n_past, how, what));
          }
          n_past += n;
        }
      }
  cpu::set_gemm_precision(saved);
}

// A prompt's rows are stored by the pool's threads (kv_store_pages with a pool): each type and
// layout must come out byte for byte as the one-thread store, and nothing outside its rows written.
TEST(KvPages, StoresSpreadOverThreadsWriteTheOneThreadBytes) {
  const int kv_heads = 4, hd = 64, context = 400, kv = kv_heads * hd, n_past = 50;
  NormalValues values{std::mt19937(11)};
  ThreadPool pool(3);
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kHeadMajor})
    for (auto [kt, vt] : {std::pair{DType::F32, DType::F32}, std::pair{DType::F16, DType::F16},
                          std::pair{DType::Q8_0, DType::Q8_0}, std::pair{DType::F16, DType::Q8_0}})
      for (int n : {1, 300}) {  // a decode step (one thread) and a prompt (spread: 300 x 256 values)
        const KvGeometry g{uint32_t(context), uint32_t(kv_heads), uint32_t(hd), 16, layout, kt, vt};
        const std::vector<float> k = values(size_t(n * kv)), v = values(size_t(n * kv));
        std::vector<uint8_t> k_one(g.bytes(), 0xab), v_one(g.values().bytes(), 0xab);
        std::vector<uint8_t> k_spread = k_one, v_spread = v_one;
        cpu::kv_store_pages(k.data(), kv, v.data(), kv, n, g, k_one.data(), v_one.data(), n_past);
        cpu::kv_store_pages(pool, k.data(), kv, v.data(), kv, n, g, k_spread.data(), v_spread.data(), n_past);
        SCOPED_TRACE(std::string(kv_layout_name(layout)) + " " + std::string(dtype_name(kt)) + "/" +
                     std::string(dtype_name(vt)) + " n " + std::to_string(n));
        EXPECT_TRUE(k_spread == k_one);
        EXPECT_TRUE(v_spread == v_one);
        EXPECT_NE(k_one, std::vector<uint8_t>(g.bytes(), 0xab));  // the rows were written at all
      }
}

TEST(KvPages, TypesAreCheckedByName) {
  EXPECT_TRUE(kv_type_from_name("q8_0", "--cache-type-k").ok());
  const Result<DType> bad = kv_type_from_name("q4_0", "--cache-type-v");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--cache-type-v"), std::string::npos);
  EXPECT_NE(bad.status().message().find("q4_0"), std::string::npos);
  // q8_0 blocks of 32 along a head: a head of 80 cannot hold them.
  EXPECT_FALSE(check_kv_type(DType::Q8_0, 80, "--cache-type-k").ok());
  EXPECT_TRUE(check_kv_type(DType::F16, 80, "--cache-type-k").ok());
}

}  // namespace
}  // namespace tandem
