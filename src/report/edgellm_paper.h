// EdgeLLM-MLIR's published analytical-model results (docs/SEEDS.md section B), for the report to
// set beside ours. Nothing in tandem is tuned to these numbers; they are only printed.
#pragma once

#include <array>

namespace tandem::report::edgellm_paper {

struct FusionRow {
  const char* strategy;
  double traffic_gb, latency_ms, power_proxy, vs_library_pct;
};
// Per layer, 16 MB TCM.
inline constexpr std::array<FusionRow, 4> kFusion16MB = {{
    {"operator library", 0.132, 2.841, 0.66, 0.0},
    {"local fusion", 0.091, 2.108, 0.78, -25.80},
    {"mega fusion", 0.060, 1.737, 1.00, -38.85},
    {"ours", 0.055, 1.544, 0.82, -45.66},
}};

struct BucketRow {
  const char* policy;
  int buckets;
  double padding_pct, latency_proxy;
};
// Heavy-tailed 128-4096 length distribution.
inline constexpr std::array<BucketRow, 4> kBuckets = {{
    {"optimized", 6, 26.37, 3.122},
    {"pow2", 6, 27.96, 3.311},
    {"every128", 32, 14.52, 2.631},
    {"single", 1, 86.23, 19.139},
}};

struct AblationRow {
  const char* change;
  double latency, traffic, peak_power;  // relative to the full system
};
inline constexpr std::array<AblationRow, 5> kAblation = {{
    {"no state-layout IR", 1.19, 1.34, 0.99},
    {"no double buffering", 1.27, 1.00, 0.88},
    {"no power constraint", 0.96, 0.98, 1.22},
    {"fixed power-of-two buckets", 1.06, 1.04, 1.02},
    {"everything on the NPU", 1.13, 1.08, 1.05},
}};

}  // namespace tandem::report::edgellm_paper
