#include "buckets/length_distribution.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/file_io.h"

namespace tandem::buckets {

namespace {

constexpr int64_t kMaxLength = 1 << 20;

Result<int64_t> parse_int(const std::string& s, const std::string& what) {
  if (s.empty() || s.size() > 8 || s.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument(what + ": '" + s + "' is not a length (an integer in 1.." + std::to_string(kMaxLength) + ")");
  }
  const int64_t v = std::stoll(s);
  if (v < 1 || v > kMaxLength) return InvalidArgument(what + ": " + s + " is outside 1.." + std::to_string(kMaxLength));
  return v;
}

Result<std::pair<int64_t, int64_t>> parse_range(const std::string& s, const std::string& what) {
  const size_t dash = s.find('-');
  if (dash == std::string::npos) return InvalidArgument(what + ": '" + s + "' is not a range LO-HI");
  TANDEM_ASSIGN_OR_RETURN(int64_t lo, parse_int(s.substr(0, dash), what));
  TANDEM_ASSIGN_OR_RETURN(int64_t hi, parse_int(s.substr(dash + 1), what));
  if (lo > hi) return InvalidArgument(what + ": range " + s + " is empty (LO > HI)");
  return std::pair{lo, hi};
}

Result<LengthDistribution> pareto(double shape, int64_t lo, int64_t hi, const std::string& name) {
  if (!(shape > 0 && shape <= 10)) return InvalidArgument(name + ": Pareto shape must be in (0, 10]");
  std::vector<std::pair<int64_t, double>> w;
  for (int64_t l = lo; l <= hi; ++l) w.push_back({l, std::pow(double(l), -(shape + 1.0))});
  TANDEM_ASSIGN_OR_RETURN(LengthDistribution d, LengthDistribution::from_weights(std::move(w), name));
  d.name = name;
  return d;
}

}  // namespace

double LengthDistribution::mean() const {
  double m = 0;
  for (auto [l, p] : points) m += double(l) * p;
  return m;
}

Result<LengthDistribution> LengthDistribution::from_weights(std::vector<std::pair<int64_t, double>> weights, const std::string& what) {
  std::map<int64_t, double> merged;
  for (auto [l, w] : weights) {
    if (l < 1 || l > kMaxLength) return InvalidArgument(what + ": length " + std::to_string(l) + " is outside 1.." + std::to_string(kMaxLength));
    if (!(w >= 0) || !std::isfinite(w)) return InvalidArgument(what + ": length " + std::to_string(l) + " has a bad weight");
    merged[l] += w;
  }
  double total = 0;
  for (auto& [l, w] : merged) total += w;
  if (!(total > 0)) return InvalidArgument(what + ": no length has a positive weight");
  LengthDistribution d;
  d.name = what;
  for (auto& [l, w] : merged)
    if (w > 0) d.points.push_back({l, w / total});
  return d;
}

LengthDistribution LengthDistribution::capped(int64_t context) const {
  LengthDistribution d;
  d.name = max_length() > context ? name + " capped at " + std::to_string(context) : name;
  for (auto [l, p] : points) {
    const int64_t len = std::min(l, context);
    if (!d.points.empty() && d.points.back().first == len) {
      d.points.back().second += p;
    } else {
      d.points.push_back({len, p});
    }
  }
  return d;
}

Result<LengthDistribution> LengthDistribution::parse(const std::string& spec) {
  if (spec == "heavy-tail") return pareto(1.5, 128, 4096, "heavy-tail");
  if (spec.rfind("uniform:", 0) == 0) {
    TANDEM_ASSIGN_OR_RETURN(auto r, parse_range(spec.substr(8), "--lengths " + spec));
    std::vector<std::pair<int64_t, double>> w;
    for (int64_t l = r.first; l <= r.second; ++l) w.push_back({l, 1.0});
    TANDEM_ASSIGN_OR_RETURN(LengthDistribution d, from_weights(std::move(w), spec));
    return d;
  }
  if (spec.rfind("pareto:", 0) == 0) {
    const std::string rest = spec.substr(7);
    const size_t colon = rest.find(':');
    if (colon == std::string::npos) return InvalidArgument("--lengths " + spec + ": expected pareto:SHAPE:LO-HI");
    char* end = nullptr;
    const std::string a = rest.substr(0, colon);
    const double shape = std::strtod(a.c_str(), &end);
    if (a.empty() || end != a.c_str() + a.size()) return InvalidArgument("--lengths " + spec + ": shape '" + a + "' is not a number");
    TANDEM_ASSIGN_OR_RETURN(auto r, parse_range(rest.substr(colon + 1), "--lengths " + spec));
    return pareto(shape, r.first, r.second, spec);
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(spec, ec)) return load_histogram(spec);
  return InvalidArgument("--lengths: '" + spec + "' is neither a histogram file nor a distribution (heavy-tail, uniform:LO-HI, pareto:SHAPE:LO-HI)");
}

Result<LengthDistribution> LengthDistribution::load_histogram(const std::string& path) {
  TANDEM_ASSIGN_OR_RETURN(const std::string text, read_regular_file(path, size_t(64) << 20, "the length histogram"));
  std::istringstream in(text);
  std::vector<std::pair<int64_t, double>> w;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n > 1000000) return InvalidArgument(path + ": more than 1000000 lines");
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream s(line);
    std::string len, weight, extra;
    if (!(s >> len)) continue;  // blank
    const std::string where = path + ":" + std::to_string(n);
    if (!(s >> weight) || (s >> extra)) return InvalidArgument(where + ": expected 'length weight', got '" + line + "'");
    TANDEM_ASSIGN_OR_RETURN(int64_t l, parse_int(len, where));
    char* end = nullptr;
    const double x = std::strtod(weight.c_str(), &end);
    if (end != weight.c_str() + weight.size() || !(x >= 0) || !std::isfinite(x)) {
      return InvalidArgument(where + ": weight '" + weight + "' is not a non-negative number");
    }
    w.push_back({l, x});
  }
  TANDEM_ASSIGN_OR_RETURN(LengthDistribution d, from_weights(std::move(w), path));
  return d;
}

}  // namespace tandem::buckets
