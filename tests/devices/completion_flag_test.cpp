// Fast sync's completion flag: a device that accepts a flag in its mapped shared memory raises it
// to each kernel's sequence number when that kernel is done, so the host can poll memory instead
// of asking the driver.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "devices/registry.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem::devices {
namespace {

TEST(CompletionFlag, OpenclRaisesTheFlagToEachKernelsSequenceNumber) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto dev = open_device("opencl", model, 2);
  if (!dev.ok()) TANDEM_OPENCL_MISSING("no OpenCL device: " << dev.status().message());
  const Weight* w = &model->layers()[0].w_up;
  // One mapped block: activations, outputs and the flag (a cache line of its own at the end).
  const size_t x_floats = size_t(w->cols), y_floats = size_t(w->rows);
  const size_t bytes = (x_floats + y_floats) * 4 + 128;
  void* block = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  ASSERT_NE(block, nullptr);
  std::memset(block, 0, bytes);
  float* x = static_cast<float*>(block);
  float* y = x + x_floats;
  auto* flag = reinterpret_cast<uint64_t*>(static_cast<char*>(block) + (bytes - 64) / 64 * 64);
  CompletionFlags* flags = (*dev)->completion_flags();
  ASSERT_NE(flags, nullptr) << "opencl raises completion flags";
  uint64_t outside = 0;
  EXPECT_FALSE(flags->use_completion_flag(&outside)) << "memory the device has not mapped";
  ASSERT_TRUE((*dev)->map_shared_memory(block, bytes).ok());
  ASSERT_TRUE(flags->use_completion_flag(flag));
  for (size_t i = 0; i < x_floats; ++i) x[i] = 0.25f;
  const OpCall call = OpCall::matmul(w, 0, w->rows, x, 1, w->cols, y, w->rows);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    auto c = (*dev)->submit(call);
    ASSERT_TRUE(c.ok()) << c.status().message();
    // Poll as the fast path does: the flag alone says when the kernel is done.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!(*c)->ready() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    EXPECT_TRUE((*c)->ready());
    EXPECT_EQ(std::atomic_ref<uint64_t>(*flag).load(), seq);
    EXPECT_TRUE((*c)->wait().ok());
    EXPECT_NE(y[0], 0.0f) << "the output was written before the flag";
  }
  dev->reset();  // release the device's wraps before the memory goes
  std::free(block);
}

TEST(CompletionFlag, DevicesWithoutFlagsSayNo) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  for (const char* name : {"cpu", "npu"}) {
    auto dev = open_device(name, model, 1);
    ASSERT_TRUE(dev.ok());
    EXPECT_EQ((*dev)->completion_flags(), nullptr) << name << " completes synchronously on its worker";
  }
}

}  // namespace
}  // namespace tandem::devices
