// The decoder's op list run on one device through the contract must reproduce it on the cpu device
// (which tests/model checks against the fp64 reference): logits at every prompt position and
// identical greedy tokens.
#include <gtest/gtest.h>

#include <cmath>

#include "devices/cpu/matmul/matmul.h"
#include "devices/registry.h"
#include "runtime/graph_forward.h"
#include "runtime/sampler.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem {
namespace {

class GraphOnDevice : public ::testing::TestWithParam<std::tuple<std::string, Arch, DType>> {};

TEST_P(GraphOnDevice, MatchesTheCpuDevice) {
  const auto [name, arch, type] = GetParam();
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(arch, type, arch != Arch::kLlama));
  ASSERT_TRUE(model);
  auto device = devices::open_device(name, model, 2);
  if (!device.ok()) TANDEM_OPENCL_MISSING(device.status().message());
  auto graph = GraphForward::create(model, std::move(*device), 64, 8);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto fast = make_cpu_forward(model, {2, 64, 8});
  ASSERT_TRUE(fast.ok());

  const int n_vocab = model->config().n_vocab, prompt_len = 19;  // three chunks of 8, 8, 3
  std::vector<TokenId> prompt;
  for (int i = 0; i < prompt_len; ++i) prompt.push_back(TokenId((i * 7919 + 11) % n_vocab));
  std::vector<float> got(size_t(prompt_len) * n_vocab), want(got.size());
  ASSERT_TRUE((*graph)->eval(prompt, 0, got.data(), true).ok());
  ASSERT_TRUE((*fast)->eval(prompt, 0, want.data(), true).ok());
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, double(std::fabs(got[i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  EXPECT_LT(worst / scale, 1e-4) << name;

  // Greedy decoding from there: identical tokens.
  std::vector<float> a(static_cast<size_t>(n_vocab)), b(static_cast<size_t>(n_vocab));
  TokenId ta = argmax(std::span(got).subspan(size_t(prompt_len - 1) * n_vocab, size_t(n_vocab)));
  TokenId tb = argmax(std::span(want).subspan(size_t(prompt_len - 1) * n_vocab, size_t(n_vocab)));
  for (int p = prompt_len; p < prompt_len + 10; ++p) {
    ASSERT_EQ(ta, tb) << name << " position " << p;
    ASSERT_TRUE((*graph)->eval(std::span(&ta, 1), p, a.data()).ok());
    ASSERT_TRUE((*fast)->eval(std::span(&tb, 1), p, b.data()).ok());
    ta = argmax(a);
    tb = argmax(b);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GraphOnDevice,
                         ::testing::Combine(::testing::Values("opencl"), ::testing::Values(Arch::kLlama, Arch::kQwen2, Arch::kQwen3, Arch::kPhi3,
                                                                                Arch::kGemma2, Arch::kGemma3),
                                            ::testing::Values(DType::F32, DType::Q4_0)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + arch_name(std::get<1>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<2>(info.param)));
                         });

// The K-quants the opencl device has kernels for (Q4_K_M files are Q4_K with Q6_K; Q5_K_M ...).
INSTANTIATE_TEST_SUITE_P(KQuants, GraphOnDevice,
                         ::testing::Combine(::testing::Values("opencl"), ::testing::Values(Arch::kLlama),
                                            ::testing::Values(DType::Q4_K, DType::Q5_K, DType::Q6_K)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + arch_name(std::get<1>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<2>(info.param)));
                         });

TEST(GraphOnDevice, OpenclCopiesNoBytesOnUnifiedMemory) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto device = devices::open_device("opencl", model, 2);
  if (!device.ok()) TANDEM_OPENCL_MISSING(device.status().message());
  if (!(*device)->caps().unified_memory) GTEST_SKIP() << "the OpenCL device has no unified memory";
  auto graph = GraphForward::create(model, std::move(*device), 32, 8);
  ASSERT_TRUE(graph.ok());
  std::vector<float> logits(size_t(model->config().n_vocab));
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE((*graph)->eval(prompt, 0, logits.data()).ok());
  EXPECT_EQ(devices::bytes_copied((*graph)->device()), 0u);
  EXPECT_EQ((*graph)->execution_report().device_bytes_copied, 0u);
}

TEST(GraphOnDevice, NpuAloneCannotRunTheWholeGraph) {
  // The NPU runs prepared matmuls only; a whole forward on it must fail cleanly, naming the op.
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  auto device = devices::open_device("npu", model, 1);
  ASSERT_TRUE(device.ok());
  auto graph = GraphForward::create(model, std::move(*device), 16, 4);
  ASSERT_TRUE(graph.ok());
  std::vector<float> logits(size_t(model->config().n_vocab));
  const TokenId t = 5;
  Status st = (*graph)->eval(std::span(&t, 1), 0, logits.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("get_rows"), std::string::npos) << st.message();
}

// On the cpu (one_job_projections) each rmsnorm goes with the projections reading it as one
// norm_linear: a llama layer's 16 ops (norm, q, k, v, 2 ropes, kv store, attention, o, add, norm,
// gate, up, swiglu, down, add) are 11 tasks, plus embedding, final norm and output.
TEST(GraphOnDevice, CpuRunsEachNormAndItsProjectionsAsOneTask) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto cpu = make_cpu_forward(model, {2, 32, 8});
  ASSERT_TRUE(cpu.ok());
  std::vector<float> logits(size_t(model->config().n_vocab));
  const TokenId token = 3;
  ASSERT_TRUE((*cpu)->eval(std::span(&token, 1), 0, logits.data()).ok());
  EXPECT_EQ((*cpu)->execution_report().tasks, uint64_t(3 + 11 * model->config().n_layers));
}

}  // namespace
}  // namespace tandem
