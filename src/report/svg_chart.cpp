#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tandem::report {

namespace {

constexpr double kW = 720, kH = 420, kLeft = 70, kRight = 190, kTop = 40, kBottom = 60;
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string tick_label(double v) {
  char b[32];
  if (std::abs(v) >= 100 || v == std::floor(v)) {
    std::snprintf(b, sizeof b, "%.0f", v);
  } else {
    std::snprintf(b, sizeof b, "%.2g", v);
  }
  return b;
}

// A "nice" step (1, 2 or 5 x 10^k) giving about `ticks` intervals up to `hi`.
double nice_step(double hi, int ticks) {
  const double raw = hi / ticks, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

void frame(std::ostringstream& o, const std::string& title, const std::string& y_label, double y_max, double step) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kW / 2 - kRight / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << svg_escape(title) << "</text>\n";
  const double ph = kH - kTop - kBottom;
  for (double v = 0; v <= y_max * (1 + 1e-9); v += step) {
    const double y = kTop + ph - v / y_max * ph;
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kW - kRight << "\" y1=\"" << num(y) << "\" y2=\"" << num(y)
      << "\" stroke=\"#ddd\"/>\n<text x=\"" << kLeft - 6 << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">" << tick_label(v) << "</text>\n";
  }
  o << "<text transform=\"translate(16," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << svg_escape(y_label) << "</text>\n";
  o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\"" << kTop << "\" y2=\"" << kTop + ph << "\" stroke=\"black\"/>\n";
  o << "<line x1=\"" << kLeft << "\" x2=\"" << kW - kRight << "\" y1=\"" << kTop + ph << "\" y2=\"" << kTop + ph << "\" stroke=\"black\"/>\n";
}

void legend(std::ostringstream& o, const std::vector<std::string>& names, const std::vector<bool>& paper) {
  for (size_t i = 0; i < names.size(); ++i) {
    const double y = kTop + 10 + double(i) * 20, x = kW - kRight + 14;
    const char* c = kColors[i % 8];
    if (paper[i]) {
      o << "<circle cx=\"" << x + 8 << "\" cy=\"" << y << "\" r=\"5\" fill=\"white\" stroke=\"" << c << "\" stroke-width=\"2\"/>\n";
    } else {
      o << "<rect x=\"" << x << "\" y=\"" << y - 5 << "\" width=\"16\" height=\"10\" fill=\"" << c << "\"/>\n";
    }
    o << "<text x=\"" << x + 22 << "\" y=\"" << y + 4 << "\">" << svg_escape(names[i]) << "</text>\n";
  }
}

}  // namespace

std::string svg_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string LineChart::svg() const {
  double x_min = INFINITY, x_max = -INFINITY, y_max = 0;
  for (const LineSeries& s : series)
    for (auto [x, y] : s.points) {
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
    }
  if (!std::isfinite(x_min)) x_min = 0, x_max = 1;
  if (x_max <= x_min) x_max = x_min + 1;
  const bool logx = log_x && x_min > 0;
  const double step = nice_step(y_max > 0 ? y_max : 1, 5);
  const double top = std::ceil((y_max > 0 ? y_max : 1) / step) * step;
  std::ostringstream o;
  frame(o, title, y_label, top, step);
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double x) {
    const double f = logx ? (std::log(x) - std::log(x_min)) / (std::log(x_max) - std::log(x_min)) : (x - x_min) / (x_max - x_min);
    return kLeft + 10 + f * (pw - 20);
  };
  auto py = [&](double y) { return kTop + ph - y / top * ph; };
  std::vector<double> xs;
  for (const LineSeries& s : series)
    for (auto [x, y] : s.points) xs.push_back(x);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (double x : xs) o << "<text x=\"" << num(px(x)) << "\" y=\"" << kTop + ph + 16 << "\" text-anchor=\"middle\">" << tick_label(x) << "</text>\n";
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 18 << "\" text-anchor=\"middle\">" << svg_escape(x_label) << "</text>\n";
  std::vector<std::string> names;
  std::vector<bool> paper;
  for (size_t i = 0; i < series.size(); ++i) {
    const LineSeries& s = series[i];
    const char* c = kColors[i % 8];
    names.push_back(s.name);
    paper.push_back(s.markers_only);
    if (!s.markers_only && s.points.size() > 1) {
      o << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\" points=\"";
      for (auto [x, y] : s.points) o << num(px(x)) << "," << num(py(y)) << " ";
      o << "\"/>\n";
    }
    for (auto [x, y] : s.points) {
      o << "<circle cx=\"" << num(px(x)) << "\" cy=\"" << num(py(y)) << "\" r=\"" << (s.markers_only ? 5 : 3) << "\" fill=\""
        << (s.markers_only ? "white" : c) << "\" stroke=\"" << c << "\" stroke-width=\"2\"><title>" << svg_escape(s.name) << ": "
        << tick_label(x) << ", " << tick_label(y) << "</title></circle>\n";
    }
  }
  legend(o, names, paper);
  o << "</svg>\n";
  return o.str();
}

std::string BarChart::svg() const {
  double y_max = 0;
  for (const BarGroup& g : groups)
    for (const auto& v : g.values)
      if (v) y_max = std::max(y_max, *v);
  const double step = nice_step(y_max > 0 ? y_max : 1, 5);
  const double top = std::ceil((y_max > 0 ? y_max : 1) / step) * step;
  std::ostringstream o;
  frame(o, title, y_label, top, step);
  o << "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
    << "<rect width=\"6\" height=\"6\" fill=\"white\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#555\" stroke-width=\"3\"/></pattern></defs>\n";
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const double gw = groups.empty() ? pw : pw / double(groups.size());
  const double bw = (gw * 0.8) / double(std::max<size_t>(1, series.size()));
  std::vector<bool> paper;
  for (const std::string& s : series) paper.push_back(s.rfind("paper", 0) == 0);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const BarGroup& g = groups[gi];
    const double x0 = kLeft + double(gi) * gw + gw * 0.1;
    for (size_t si = 0; si < g.values.size() && si < series.size(); ++si) {
      if (!g.values[si]) continue;
      const double h = *g.values[si] / top * ph, x = x0 + double(si) * bw;
      const char* c = kColors[si % 8];
      o << "<rect x=\"" << num(x) << "\" y=\"" << num(kTop + ph - h) << "\" width=\"" << num(bw * 0.9) << "\" height=\"" << num(h)
        << "\" fill=\"" << (paper[si] ? "url(#hatch)" : c) << "\" stroke=\"" << c << "\"><title>" << svg_escape(series[si]) << " "
        << svg_escape(g.category) << ": " << tick_label(*g.values[si]) << "</title></rect>\n";
    }
    o << "<text x=\"" << num(x0 + gw * 0.4) << "\" y=\"" << kTop + ph + 16 << "\" text-anchor=\"middle\">" << svg_escape(g.category) << "</text>\n";
  }
  // Hatched legend entries for paper series.
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = kTop + 10 + double(i) * 20, x = kW - kRight + 14;
    const char* c = kColors[i % 8];
    o << "<rect x=\"" << x << "\" y=\"" << y - 5 << "\" width=\"16\" height=\"10\" fill=\"" << (paper[i] ? "url(#hatch)" : c)
      << "\" stroke=\"" << c << "\"/>\n<text x=\"" << x + 22 << "\" y=\"" << y + 4 << "\">" << svg_escape(series[i]) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace tandem::report
