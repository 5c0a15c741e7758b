// Length distributions: the named ones have the stated support and shape, histogram files are
// read strictly (errors name file:line and the value).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "buckets/length_distribution.h"

namespace tandem::buckets {
namespace {

TEST(LengthDistribution, NamedDistributions) {
  auto h = LengthDistribution::parse("heavy-tail");
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->min_length(), 128);
  EXPECT_EQ(h->max_length(), 4096);
  double total = 0;
  for (auto [l, p] : h->points) total += p;
  EXPECT_NEAR(total, 1.0, 1e-9);
  EXPECT_LT(h->mean(), 600) << "heavy tail: most requests are short";
  EXPECT_GT(h->points.front().second, h->points.back().second * 100);
  auto u = LengthDistribution::parse("uniform:10-20");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->points.size(), 11u);
  EXPECT_NEAR(u->mean(), 15.0, 1e-9);
  auto p = LengthDistribution::parse("pareto:2.5:100-200");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->max_length(), 200);
  for (const char* bad : {"heavy", "uniform:20-10", "uniform:0-5", "pareto:x:1-5", "pareto:1.5", "uniform:1-99999999"}) {
    auto r = LengthDistribution::parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
}

TEST(LengthDistribution, HistogramFiles) {
  const std::string path = ::testing::TempDir() + "/tandem-lengths.txt";
  {
    std::ofstream f(path);
    f << "# length weight\n100 3\n\n200 1  # tail\n100 1\n";
  }
  auto d = LengthDistribution::parse(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->points.size(), 2u);
  EXPECT_DOUBLE_EQ(d->points[0].second, 0.8) << "repeats merge";
  EXPECT_DOUBLE_EQ(d->mean(), 120.0);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"100\n", ":1: expected 'length weight'"}, {"100 2 3\n", ":1: expected"}, {"x 2\n", ":1: 'x' is not a length"},
      {"100 -1\n", ":1: weight '-1'"},          {"100 0\n", "no length has a positive weight"}, {"0 1\n", ":1: 0 is outside"}};
  for (const auto& [text, want] : bad) {
    {
      std::ofstream f(path);
      f << text;
    }
    auto r = LengthDistribution::load_histogram(path);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
  std::remove(path.c_str());
  EXPECT_FALSE(LengthDistribution::load_histogram(path).ok());
}

}  // namespace
// A model's context caps the lengths: the tail above it is asked at the context.
TEST(LengthDistribution, CappedAtAContextMovesTheTailThere) {
  auto h = LengthDistribution::parse("heavy-tail");
  ASSERT_TRUE(h.ok());
  const LengthDistribution c = h->capped(512);
  EXPECT_EQ(c.max_length(), 512);
  double above = 0, total = 0;
  for (auto [l, p] : h->points) above += l >= 512 ? p : 0.0;
  for (auto [l, p] : c.points) total += p;
  EXPECT_NEAR(total, 1.0, 1e-12);
  EXPECT_NEAR(c.points.back().second, above, 1e-12);
  EXPECT_EQ(h->capped(8192).points, h->points);  // a context above every length changes nothing
}

}  // namespace tandem::buckets
