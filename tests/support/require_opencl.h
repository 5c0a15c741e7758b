// Where OpenCL is required (CI: .ci/run exports TANDEM_REQUIRE_OPENCL=1), a test that finds no
// OpenCL device fails with the reason instead of skipping; elsewhere it skips.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace tandem::testing {

// True when the environment variable TANDEM_REQUIRE_OPENCL is "1".
inline bool opencl_required() {
  const char* v = std::getenv("TANDEM_REQUIRE_OPENCL");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace tandem::testing

// In a test body where OpenCL is missing: FAIL with the reason when it is required, else
// GTEST_SKIP with it; returns from the test either way. `why` is a stream chain:
// TANDEM_OPENCL_MISSING("no OpenCL device: " << status.message()).
#define TANDEM_OPENCL_MISSING(why)                                                        \
  do {                                                                                    \
    if (::tandem::testing::opencl_required())                                             \
      FAIL() << "OpenCL is required here (TANDEM_REQUIRE_OPENCL=1) but missing: " << why; \
    else                                                                                  \
      GTEST_SKIP() << why;                                                                \
  } while (0)
