// SVG charts: one line per measured series, hollow markers (no line) for published points,
// hatched bars for paper series, text escaped.
#include <gtest/gtest.h>

#include "report/svg_chart.h"

namespace tandem::report {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(SvgChart, LineChartDrawsALinePerSeriesAndMarkersForPaperPoints) {
  LineChart c{"Prefill <tok/s> & more", "length", "tok/s", true, {}};
  c.series.push_back({"ours a", {{32, 10}, {64, 20}, {128, 40}}, false});
  c.series.push_back({"ours b", {{32, 5}, {64, 6}}, false});
  c.series.push_back({"paper", {{64, 30}}, true});
  const std::string svg = c.svg();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 2u) << "paper points are not joined";
  EXPECT_EQ(count(svg, "<circle"), 3u + 2u + 1u + 1u) << "a marker per point plus the paper legend marker";
  EXPECT_NE(svg.find("Prefill &lt;tok/s&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(svg.find("<tok/s>"), std::string::npos);
}

TEST(SvgChart, HigherValuesAreDrawnHigher) {
  LineChart c{"t", "x", "y", false, {{"s", {{1, 10}, {2, 40}}, false}}};
  const std::string svg = c.svg();
  // The polyline's second point (y=40) must have a smaller SVG y than the first (y=10).
  const size_t p = svg.find("points=\"");
  ASSERT_NE(p, std::string::npos);
  double x1, y1, x2, y2;
  ASSERT_EQ(std::sscanf(svg.c_str() + p + 8, "%lf,%lf %lf,%lf", &x1, &y1, &x2, &y2), 4);
  EXPECT_LT(x1, x2);
  EXPECT_LT(y2, y1);
}

TEST(SvgChart, BarChartHatchesPaperSeriesAndSkipsMissingValues) {
  BarChart c{"Decode", "tok/s", {"ours", "paper"}, {{"8b", {8.0, 14.0}}, {"3b", {17.0, std::nullopt}}}};
  const std::string svg = c.svg();
  // Three bars + two legend swatches; one bar and one swatch hatched.
  EXPECT_EQ(count(svg, "<rect x="), 5u);
  EXPECT_EQ(count(svg, "fill=\"url(#hatch)\""), 2u);
  EXPECT_NE(svg.find("paper 8b: 14"), std::string::npos);
  EXPECT_EQ(svg.find("paper 3b"), std::string::npos);
}

}  // namespace
}  // namespace tandem::report
