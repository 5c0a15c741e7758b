// Shared pieces of the opencl tests: one runtime + kernels per test binary, host buffers with
// sentinels around them, NMSE.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "devices/opencl/cl_ops.h"
#include "tests/support/require_opencl.h"

namespace tandem::opencl::testing {

// The shared kernels, or null with the reason in *why. *skip is set when the reason is that no
// OpenCL platform/device is installed (the test skips); any other failure (a kernel that does
// not compile) fails the test.
std::shared_ptr<Ops> shared_ops(std::string* why, bool* skip);

#define TANDEM_CL_OPS_OR_SKIP(var)                                          \
  std::string var##_why;                                                    \
  bool var##_skip = false;                                                  \
  std::shared_ptr<::tandem::opencl::Ops> var =                              \
      ::tandem::opencl::testing::shared_ops(&var##_why, &var##_skip);       \
  if (!var && var##_skip) TANDEM_OPENCL_MISSING("no OpenCL device: " << var##_why); \
  if (!var) FAIL() << var##_why

// n floats (or raw bytes) in 64-byte aligned host memory, wrapped zero-copy, with kGuard
// sentinel floats on each side that no kernel may touch.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 16;  // floats (64 bytes) before and after
  static constexpr float kSentinel = -7.25e30f;

  GuardedBuffer(Runtime& rt, size_t n_floats);
  GuardedBuffer(Runtime& rt, const void* bytes, size_t n_bytes);  // a copy of bytes
  float* data() { return mem_.get() + kGuard; }
  const float* data() const { return mem_.get() + kGuard; }
  size_t size() const { return n_; }
  BufRef ref() const { return BufRef{buf_.mem(), kGuard * sizeof(float)}; }
  bool zero_copy() const { return buf_.zero_copy(); }
  // True when all guard floats still hold the sentinel.
  bool guards_intact() const;

 private:
  struct Free {
    void operator()(float* p) const;
  };
  size_t n_;
  std::unique_ptr<float, Free> mem_;
  Buffer buf_;
};

// Normalized mean squared error sum((a-b)^2) / sum(b^2); b is the reference.
double nmse(const float* a, const float* b, size_t n);
// True when every value is finite.
bool all_finite(const float* a, size_t n);
std::vector<float> random_floats(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f);

// A CPU thread pool for the tests' reference results, shared by every test of the program.
inline ThreadPool& cpu_pool() {
  static ThreadPool pool(2);
  return pool;
}

}  // namespace tandem::opencl::testing
