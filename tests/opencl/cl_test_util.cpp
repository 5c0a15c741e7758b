#include "tests/opencl/cl_test_util.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>

namespace tandem::opencl::testing {

std::shared_ptr<Ops> shared_ops(std::string* why, bool* skip) {
  static std::once_flag once;
  static std::shared_ptr<Ops> ops;
  static std::string reason;
  static bool no_device = false;
  std::call_once(once, [] {
    auto rt = Runtime::create();
    if (!rt.ok()) {
      reason = rt.status().message();
      no_device = rt.status().code() == StatusCode::kNotFound;
      return;
    }
    auto o = Ops::create(*rt);
    if (!o.ok()) {
      reason = o.status().message();
      return;
    }
    ops = *o;
    std::printf("[opencl] %s\n", ops->runtime().caps().describe().c_str());
  });
  if (why) *why = reason;
  if (skip) *skip = no_device;
  return ops;
}

void GuardedBuffer::Free::operator()(float* p) const { std::free(p); }

GuardedBuffer::GuardedBuffer(Runtime& rt, size_t n_floats) : n_(n_floats) {
  const size_t total = (n_floats + 2 * kGuard + 15) / 16 * 16;
  mem_.reset(static_cast<float*>(std::aligned_alloc(64, total * sizeof(float))));
  for (size_t i = 0; i < total; ++i) mem_.get()[i] = kSentinel;
  auto b = rt.wrap_host(mem_.get(), total * sizeof(float), false);
  EXPECT_TRUE(b.ok()) << b.status().message();
  if (b.ok()) buf_ = std::move(*b);
}

GuardedBuffer::GuardedBuffer(Runtime& rt, const void* bytes, size_t n_bytes)
    : GuardedBuffer(rt, (n_bytes + 3) / 4) {
  std::memcpy(data(), bytes, n_bytes);
}

bool GuardedBuffer::guards_intact() const {
  const float* p = mem_.get();
  for (size_t i = 0; i < kGuard; ++i)
    if (p[i] != kSentinel) return false;
  const size_t total = (n_ + 2 * kGuard + 15) / 16 * 16;
  for (size_t i = kGuard + n_; i < total; ++i)
    if (p[i] != kSentinel) return false;
  return true;
}

double nmse(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den == 0 ? num : num / den;
}

bool all_finite(const float* a, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(a[i])) return false;
  return true;
}

std::vector<float> random_floats(size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace tandem::opencl::testing
