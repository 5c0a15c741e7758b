// The tiling search of state-to-tdma: every blocking x buffering of a matmul that fits a TCM
// budget, priced on the shared cost model (npu/oplib estimate_matmul_cycles); the cheapest wins.
#pragma once

#include <optional>
#include <string>

#include "npu/oplib/matmul.h"

namespace tandem::ir {

enum class Buffering { kAuto, kDouble, kSingle };

struct TilingChoice {
  tandem::npu::oplib::MatmulSpec spec;  // with the chosen double_buffer / double_buffer_out
  tandem::npu::oplib::MatmulPlan plan;
  double cycles = 0;
  double power_w = 0;       // average power of the schedule (estimate_matmul_power_w)
  uint64_t candidates = 0;  // blockings x bufferings priced
};

// The cheapest schedule within `budget` TCM bytes and `power_cap_w` watts (0 = no cap; ties: less
// TCM). Under a cap the search also spreads the tile ops over fewer matrix arrays: slower, lower
// peak power. Without a cap the candidates include the operator library's own blocking, so the
// search is never priced worse than the library. nullopt with `why` filled when nothing fits (it
// names the smallest TCM, or the lowest power, any schedule needs).
std::optional<TilingChoice> searchTiling(tandem::npu::oplib::MatmulSpec base, const tandem::npu::TargetModel& t,
                                         uint64_t budget, double power_cap_w, Buffering buffering, std::string& why);

}  // namespace tandem::ir
