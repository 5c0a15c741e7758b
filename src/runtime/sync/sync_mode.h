// How a device worker waits for its kernel: blocking (like clFinish) or HeteroInfer's fast sync
// (sleep for the time predicted from earlier kernels of the same shape, then poll the completion
// flag, falling back to blocking if the prediction was far off). The real driver, the simulator,
// the profilers and the solver all name the protocol by this.
#pragma once

#include <string>

#include "core/status.h"

namespace tandem {

enum class SyncMode { kBlocking, kFast };
const char* sync_mode_name(SyncMode m);
Result<SyncMode> sync_mode_from_name(const std::string& name);

}  // namespace tandem
