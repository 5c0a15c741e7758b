// The profiler's output and the solver's input: measured (or modeled) latencies of the model's
// matmul shapes on each unit, plus the sync and copy costs between units. JSON on disk
// (`tandem profile -o costdb.json`), read back strictly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.h"

namespace tandem::planner {

// One latency: `out` rows of a weight [of x in] (all of it when out == of), activation [in x n],
// on `unit`: the role of the device or SoC unit that ran it (runtime/device_roles.h): "gpu" (the
// GPU's role, which the cpu takes where there is no gpu), "npu", or "cpu" (the fallback). The parent matters: a unit's rate can depend on the whole weight's
// shape (SEEDS NPU-3), so a 416-row part of a 4096x4096 weight and of a 1024x4096 one differ.
struct CostPoint {
  std::string unit;
  int64_t out = 0, in = 0, n = 0;
  double seconds = 0;
  int64_t of = 0;  // the parent weight's rows (>= out)
};

struct CostDb {
  std::string source;  // what was profiled: "soc sd8gen3" or "devices opencl,npu on <host>"
  std::string weight_type = "q4_0";
  std::vector<int> standard_lengths;  // the NPU's static lengths the points cover (and 1)
  std::vector<CostPoint> points;
  double sync_fast_s = 0;      // one GPU<->NPU handoff with fast sync (0: not measured, one device)
  double sync_blocking_s = 0;  // ... with a blocking wait
  double copy_bytes_per_s = 0; // host copies (padding staging when a slot has no room)
  double prepare_fixed_s = 0, prepare_per_byte_s = 0;  // NPU graph build (online-prepare)
  double profile_seconds = 0;  // how long profiling took (wall clock)

  // of: the parent weight's rows (0: the whole weight, of = out).
  void add(std::string unit, int64_t out, int64_t in, int64_t n, double seconds, int64_t of = 0);
  std::string to_json() const;
  static Result<CostDb> from_json_text(std::string_view text, const std::string& file);
  static Result<CostDb> load(const std::string& path);
};

}  // namespace tandem::planner
