// The device profile a run's plan is solved from, cached per device set + model shapes (SEEDS
// A.4: the profiler runs offline, once; runs read its result). A profile's numbers depend on the
// devices (their kinds and what they are, Device::identity: the OpenCL device and platform, the
// NPU target, the host cpu), the
// threads they run on and the matmul shapes profiled -- not on the weights' values, so another
// file of the same shapes and weight type reuses it, and a change to any of those is another key.
// With a compile cache the npu's programs are its (the key names the cache and power level). The key is those facts in words; the file is named by their hash and holds the words, so a
// hash collision or a hand-edited file is re-profiled, never trusted.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "devices/device.h"
#include "planner/cost_db.h"
#include "planner/profiler.h"

namespace tandem::planner {

struct ProfileCacheKey {
  std::string text;               // what the profile depends on, one "name: value" per line
  std::string file_name() const;  // "<the first 20 hex digits of sha256(text)>.json"
};

// A device of the set: its name, kind and Device::identity().
struct ProfiledDevice {
  std::string name;
  devices::DeviceKind kind = devices::DeviceKind::kCpu;
  std::string identity;
};

// `set`: the devices to profile; `host_cpu`: the machine's processor (cpu_model_name()).
ProfileCacheKey profile_cache_key(const std::vector<ProfiledDevice>& set, const std::string& host_cpu, const ProfileSpace& space,
                                  int threads, int reps);

struct CachedProfile {
  CostDb db;
  std::string path;         // the cache file
  bool from_cache = false;  // read back (true) or profiled now (false)
  std::string why;          // "cached" / why it was profiled now (none cached, the cached one unreadable, ...)
};

// The profile cached in `dir` under `key`; with none there (or one that does not read back or was
// made for other facts), runs `profile` and stores its result. A cache that cannot be written
// only costs the next run a profile again: `why` says so, the run goes on.
Result<CachedProfile> cached_profile(const std::string& dir, const ProfileCacheKey& key,
                                     const std::function<Result<CostDb>()>& profile);

}  // namespace tandem::planner
