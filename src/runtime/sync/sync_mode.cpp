#include "runtime/sync/sync_mode.h"

namespace tandem {

const char* sync_mode_name(SyncMode m) { return m == SyncMode::kFast ? "fast" : "blocking"; }

Result<SyncMode> sync_mode_from_name(const std::string& name) {
  if (name == "fast") return SyncMode::kFast;
  if (name == "blocking") return SyncMode::kBlocking;
  return InvalidArgument("--sync: '" + name + "' is not fast or blocking");
}

}  // namespace tandem
