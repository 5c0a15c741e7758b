// The strategies' names, as --strategy and plan files spell them. Apart from the partitioner so
// the plan reader (and its fuzz target) need nothing else of the runtime.
#include "runtime/partition.h"

namespace tandem {
namespace {

struct NamedStrategy {
  Strategy s;
  const char* name;
};
constexpr NamedStrategy kStrategies[] = {
    {Strategy::kGpuOnly, "gpu-only"},
    {Strategy::kNpuOnly, "npu-only"},
    {Strategy::kLayer, "layer"},
    {Strategy::kWeightCentric, "weight-centric"},
    {Strategy::kActivationCentric, "activation-centric"},
    {Strategy::kMultiTensor, "multi-tensor"},
    {Strategy::kHybrid, "hybrid"},
    {Strategy::kPadding, "padding"},
    {Strategy::kOnlinePrepare, "online-prepare"},
    {Strategy::kNpuPipe, "npu-pipe"},
};

}  // namespace

const char* strategy_name(Strategy s) {
  for (const NamedStrategy& n : kStrategies)
    if (n.s == s) return n.name;
  return "?";
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const NamedStrategy& n : kStrategies) out.push_back(n.name);
  return out;
}

Result<Strategy> strategy_from_name(const std::string& name) {
  std::string all;
  for (const NamedStrategy& n : kStrategies) {
    if (name == n.name) return n.s;
    all += (all.empty() ? "" : ", ") + std::string(n.name);
  }
  return InvalidArgument("--strategy: '" + name + "' is not a strategy (" + all + ")");
}

}  // namespace tandem
