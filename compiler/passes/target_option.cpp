#include "passes/target_option.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tandem::ir {

const tandem::npu::TargetModel* loadTarget(llvm::StringRef path, mlir::Operation* anchor) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<tandem::npu::TargetModel>> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = path.str();
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();
  auto loaded = key.empty() ? tandem::npu::TargetModel::load_default() : tandem::npu::TargetModel::load(key);
  if (!loaded.ok()) {
    anchor->emitError() << "cannot load NPU target '" << (key.empty() ? tandem::npu::TargetModel::default_path() : key)
                        << "': " << loaded.status().message();
    return nullptr;
  }
  auto& slot = cache[key];
  slot = std::make_unique<tandem::npu::TargetModel>(std::move(loaded).value());
  return slot.get();
}

mlir::FailureOr<uint64_t> budgetBytes(int64_t option, const tandem::npu::TargetModel& t, mlir::Operation* anchor) {
  if (option == 0) return t.tcm.bytes;
  if (option < 0 || uint64_t(option) > t.tcm.bytes) {
    anchor->emitError() << "tcm-budget " << option << " must be in 1.." << t.tcm.bytes << " (the TCM of " << t.name << ")";
    return mlir::failure();
  }
  return uint64_t(option);
}

}  // namespace tandem::ir
