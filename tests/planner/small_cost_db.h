// A small constructed cost DB (one 256x256 weight and its 128-row part, lengths 1/32/64) shared by
// the plan and JSON-robustness tests.
#pragma once

#include "planner/cost_db.h"

namespace tandem::planner::testing {

inline CostDb small_db() {
  CostDb db;
  db.source = "constructed";
  db.standard_lengths = {32, 64};
  db.sync_fast_s = 5e-6;
  db.sync_blocking_s = 4e-4;
  db.copy_bytes_per_s = 1e10;
  db.prepare_fixed_s = 1e-3;
  db.prepare_per_byte_s = 1e-9;
  for (int64_t rows : {256, 128})
    for (int64_t n : {1, 32, 64}) {
      db.add("gpu", rows, 256, n, 1e-6 * double(rows * n) / 32.0 + 2e-6, 256);  // parts of a 256-row weight
      db.add("npu", rows, 256, n, 3e-6 * double(rows) / 256.0 * (n == 1 ? 1.0 : double(n) / 32.0), 256);
    }
  return db;
}

}  // namespace tandem::planner::testing
