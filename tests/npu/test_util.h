// Shared helpers for the npu tests.
#pragma once

#include <string>

#include "npu/target_model.h"

namespace tandem::npu::testing {

inline std::string default_target_path() { return std::string(TANDEM_SOURCE_DIR) + "/data/npu/hexagon-v75.json"; }

// Loaded once; the tests never mutate it.
inline const TargetModel& target() {
  static const TargetModel t = [] {
    auto r = TargetModel::load(default_target_path());
    if (!r.ok()) throw std::runtime_error(r.status().message());
    return r.value();
  }();
  return t;
}

}  // namespace tandem::npu::testing

namespace tandem::npu {
// The target every NPU test runs on, by the short name the tests use.
inline const TargetModel& T() { return testing::target(); }
}  // namespace tandem::npu
