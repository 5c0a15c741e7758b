// Small, dependency-free SVG charts for reports: a line chart (x numeric, one line per series)
// and a grouped bar chart (categories x series). Paper values are drawn as hollow markers or
// hatched bars beside ours, so a reader sees at a glance where a prediction departs.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tandem::report {

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  bool markers_only = false;                      // published points: hollow markers, no line
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false;
  std::vector<LineSeries> series;
  std::string svg() const;
};

struct BarGroup {
  std::string category;
  std::vector<std::optional<double>> values;  // one per series name (nullopt: no bar)
};

struct BarChart {
  std::string title, y_label;
  std::vector<std::string> series;  // names; a name starting with "paper" is drawn hatched
  std::vector<BarGroup> groups;
  std::string svg() const;
};

// Escapes &, <, > and quotes for SVG text.
std::string svg_escape(const std::string& s);

}  // namespace tandem::report
