#include "passes/tiling_search.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <vector>

namespace tandem::ir {

namespace oplib = tandem::npu::oplib;

namespace {
// Powers of two up to `limit`, and `limit` itself (the whole dimension in one block).
std::set<uint32_t> sizes(uint32_t limit, uint32_t unit) {
  std::set<uint32_t> out;
  for (uint64_t v = unit; v <= limit; v *= 2) out.insert(uint32_t(v));
  out.insert(limit);
  return out;
}
}  // namespace

std::optional<TilingChoice> searchTiling(oplib::MatmulSpec base, const tandem::npu::TargetModel& t, uint64_t budget,
                                         double power_cap_w, Buffering buffering, std::string& why) {
  std::vector<std::pair<bool, bool>> modes;  // (double weights, double output)
  if (buffering != Buffering::kSingle) modes.push_back({true, true});
  if (buffering == Buffering::kAuto) {
    modes.push_back({true, false});
    modes.push_back({false, true});
  }
  if (buffering != Buffering::kDouble) modes.push_back({false, false});

  // Geometry (tile counts) from a 1x1x1 blocking; it fails only on an invalid spec.
  auto geo = oplib::block_matmul(base, t, uint32_t(t.matrix.tile_dim), 1, 1);
  if (!geo.ok()) {
    why = geo.status().message();
    return std::nullopt;
  }
  const uint32_t T = geo->T;
  std::set<uint32_t> nbs = sizes(geo->n_pad, T), rs = sizes(geo->OT, 1), kcs = sizes(geo->KT, 1);
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> blockings;
  for (uint32_t nb : nbs)
    for (uint32_t r : rs)
      for (uint32_t kc : kcs) blockings.push_back({nb, r, kc});
  if (auto lib = oplib::plan_matmul(base, t); lib.ok()) blockings.push_back({lib->nb, lib->R, lib->kc});

  // Arrays: all of them, and under a power cap halvings down to one.
  std::vector<uint32_t> arrays = {0};
  if (power_cap_w > 0)
    for (uint32_t a = uint32_t(t.matrix.arrays) / 2; a >= 1; a /= 2) arrays.push_back(a);

  std::optional<TilingChoice> best;
  uint64_t smallest = UINT64_MAX, priced = 0;
  double lowest_power = INFINITY;
  for (uint32_t a : arrays)
    for (auto [dw, dy] : modes) {
      oplib::MatmulSpec s = base;
      s.double_buffer = dw;
      s.double_buffer_out = dy;
      s.arrays = a;
      for (auto [nb, r, kc] : blockings) {
        auto plan = oplib::block_matmul(s, t, nb, r, kc);
        if (!plan.ok()) continue;
        smallest = std::min(smallest, plan->tcm_used);
        if (plan->tcm_used > budget) continue;
        const double power = oplib::estimate_matmul_power_w(s, *plan, t);
        lowest_power = std::min(lowest_power, power);
        if (power_cap_w > 0 && power > power_cap_w) continue;
        ++priced;
        const double cycles = oplib::estimate_matmul_cycles(s, *plan, t);
        if (!best || cycles < best->cycles || (cycles == best->cycles && plan->tcm_used < best->plan.tcm_used))
          best = TilingChoice{s, *plan, cycles, power, 0};
      }
    }
  if (!best) {
    if (smallest <= budget)
      why = "no schedule within the power cap of " + std::to_string(power_cap_w) + " W: the lowest draws " +
            std::to_string(lowest_power) + " W";
    else
      why = "no schedule fits the TCM budget of " + std::to_string(budget) + " B: the smallest needs " +
            (smallest == UINT64_MAX ? std::string("more than the TCM") : std::to_string(smallest) + " B");
    return std::nullopt;
  }
  best->candidates = priced;
  return best;
}

}  // namespace tandem::ir
