// Mean and sample standard deviation of repeated measurements, as llama-bench reports them.
#pragma once

#include <cmath>
#include <vector>

namespace tandem::cli {

struct MeanStd {
  double mean = 0, stddev = 0;
};

inline MeanStd mean_std(const std::vector<double>& v) {
  MeanStd r;
  if (v.empty()) return r;
  for (double x : v) r.mean += x;
  r.mean /= double(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - r.mean) * (x - r.mean);
    r.stddev = std::sqrt(ss / double(v.size() - 1));
  }
  return r;
}

}  // namespace tandem::cli
