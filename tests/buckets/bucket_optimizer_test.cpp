// The bucket optimizer: the dynamic program finds the brute-force optimum on random small cases,
// is never worse than the fixed policies it is compared with, and scores padding as defined.
#include <gtest/gtest.h>

#include <random>

#include "buckets/bucket_optimizer.h"
#include "buckets/layer_latency.h"
#include "model/gen_model.h"

namespace tandem::buckets {
namespace {

TEST(Buckets, PaddingAndLatencyAreExpectations) {
  auto d = LengthDistribution::from_weights({{1, 1.0}, {3, 1.0}}, "two");
  ASSERT_TRUE(d.ok());
  BucketObjective o;
  o.latency = [](int64_t b) { return double(b) * 10.0; };
  o.variant_weight = 1.0;
  auto s = evaluate_buckets(*d, {4}, o, "one");
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->padding_pct, 50.0);  // E[b - l] = 2 of E[b] = 4
  EXPECT_DOUBLE_EQ(s->expected_latency, 40.0);
  EXPECT_DOUBLE_EQ(s->objective, 41.0);
  s = evaluate_buckets(*d, {3, 1}, o, "two");  // unsorted on purpose
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->boundaries, (std::vector<int64_t>{1, 3}));
  EXPECT_DOUBLE_EQ(s->padding_pct, 0.0);
  EXPECT_DOUBLE_EQ(s->expected_latency, 20.0);
  EXPECT_FALSE(evaluate_buckets(*d, {2}, o, "short").ok()) << "length 3 has no bucket";
}

TEST(Buckets, DynamicProgramMatchesBruteForce) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::pair<int64_t, double>> w;
    const int n = 1 + int(rng() % 12);
    for (int i = 0; i < n; ++i) w.push_back({1 + int64_t(rng() % 190), double(rng() % 100)});
    w.push_back({1 + int64_t(rng() % 190), 1.0});
    auto d = LengthDistribution::from_weights(w, "random");
    ASSERT_TRUE(d.ok());
    const double a = double(rng() % 100), b = double(rng() % 10) / 10.0, q = double(rng() % 10) / 1000.0;
    BucketObjective o;
    o.latency = [=](int64_t x) { return a + b * double(x) + q * double(x) * double(x); };
    o.padding_weight = double(rng() % 3) / 10.0;
    o.variant_weight = double(rng() % 50);
    const std::vector<int64_t> cands = candidate_boundaries(*d, 16);
    ASSERT_LE(cands.size(), 13u);
    const int K = 1 + int(rng() % 4);
    auto dp = optimize_buckets(*d, cands, K, o);
    auto bf = brute_force_buckets(*d, cands, K, o);
    ASSERT_TRUE(dp.ok() && bf.ok());
    EXPECT_NEAR(dp->objective, bf->objective, 1e-9 * std::max(1.0, bf->objective)) << "trial " << trial;
    EXPECT_LE(int(dp->boundaries.size()), K);
    EXPECT_GE(dp->boundaries.back(), d->max_length());
  }
}

TEST(Buckets, OptimizedIsNeverWorseThanTheFixedPolicies) {
  auto d = LengthDistribution::parse("heavy-tail");
  ASSERT_TRUE(d.ok());
  auto model = shape_only_preset("llama3.2-1b", DType::Q4_0);
  auto target = npu::TargetModel::load_default();
  ASSERT_TRUE(model.ok() && target.ok());
  const auto layer = npu_layer_latency(*target, **model);
  BucketObjective o;
  o.latency = [&](int64_t b) { return layer(b) * 1e3; };
  const std::vector<int64_t> cands = candidate_boundaries(*d, 128);
  auto pow2 = evaluate_buckets(*d, pow2_boundaries(*d, 128), o, "pow2");
  ASSERT_TRUE(pow2.ok());
  EXPECT_EQ(pow2->boundaries, (std::vector<int64_t>{128, 256, 512, 1024, 2048, 4096}));
  auto opt = optimize_buckets(*d, cands, int(pow2->boundaries.size()), o);
  ASSERT_TRUE(opt.ok());
  EXPECT_LE(opt->objective, pow2->objective + 1e-12);
  auto single = evaluate_buckets(*d, single_boundary(*d, 128), o, "single");
  ASSERT_TRUE(single.ok());
  EXPECT_LT(opt->expected_latency, single->expected_latency);
  EXPECT_GT(single->padding_pct, pow2->padding_pct);
  auto every = evaluate_buckets(*d, every_boundaries(*d, 128), o, "every128");
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->boundaries.size(), 32u);
  auto opt32 = optimize_buckets(*d, cands, 32, o);
  ASSERT_TRUE(opt32.ok());
  EXPECT_LE(opt32->objective, every->objective + 1e-12) << "with 32 buckets allowed the optimum is at least every-128";
  EXPECT_FALSE(optimize_buckets(*d, cands, 0, o).ok());
  EXPECT_FALSE(optimize_buckets(*d, {128, 256}, 2, o).ok()) << "no candidate holds 4096";
}

TEST(Buckets, TheLayerLatencyProxyGrowsWithLength) {
  auto model = shape_only_preset("llama3.2-1b", DType::Q4_0);
  auto target = npu::TargetModel::load_default();
  ASSERT_TRUE(model.ok() && target.ok());
  const auto layer = npu_layer_latency(*target, **model);
  double prev = 0;
  for (int64_t b : {1, 32, 33, 128, 512, 4096}) {
    EXPECT_GE(layer(b), prev) << b;
    prev = layer(b);
  }
  // Short lengths pay the array's 32-row tile and the whole weight stream: one row costs nearly
  // what 32 do (only the vector work and attention scale with the real rows).
  EXPECT_GT(layer(1), 0.9 * layer(32)) << "short lengths pay the array's 32-row tile and the weight stream";
  EXPECT_GT(layer(4096), 8 * layer(512)) << "attention's quadratic term";
}

}  // namespace
}  // namespace tandem::buckets
