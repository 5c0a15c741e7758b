// ClForward against CpuForward on small generated models: logits close at every prompt position
// and decode step, identical greedy tokens, and no byte copied between host and device.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "devices/cpu/cpu_forward.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/opencl/cl_forward.h"
#include "tests/model/test_models.h"
#include "tests/opencl/cl_test_util.h"

namespace tandem::opencl {
namespace {

struct Case {
  Arch arch;
  DType type;
};

void PrintTo(const Case& c, std::ostream* os) { *os << arch_name(c.arch) << "/" << dtype_name(c.type); }

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return arch_name(info.param.arch) + "_" + std::string(dtype_name(info.param.type));
}

// Largest |a - b| relative to the largest |b| (as in tests/model/forward_vs_reference_test.cpp).
double relative_error(const float* got, const float* want, size_t n) {
  double worst = 0.0, scale = 1e-30;
  for (size_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return worst / scale;
}

// Both paths are fp32 over the same weights; they differ in summation order and in exp/sqrt.
constexpr double kTolerance = 1e-4;

TokenId argmax(const std::vector<float>& v) {
  return TokenId(std::max_element(v.begin(), v.end()) - v.begin());
}

class ClForwardVsCpu : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    saved_ = cpu::gemm_precision();
    cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  }
  void TearDown() override { cpu::set_gemm_precision(saved_); }
  cpu::GemmPrecision saved_ = cpu::GemmPrecision::kFp32;
};

TEST_P(ClForwardVsCpu, LogitsMatchAndGreedyTokensAreIdenticalWithoutCopies) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  const Case c = GetParam();
  auto model = tandem::testing::load_or_die(tandem::testing::small_model_path(c.arch, c.type));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  const uint64_t copied_before = ops->runtime().bytes_copied();

  // max_batch 8: a 19-token prompt runs as chunks of 8, 8, 3 (GEMM, GEMM, GEMV kernels).
  auto cl = ClForward::create(model, {64, 8, ops});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  auto cpu = cpu::CpuForward::create(model, {2, 64, 8});
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE((*cl)->zero_copy());

  std::vector<TokenId> prompt;
  for (int i = 0; i < 19; ++i) prompt.push_back(TokenId((i * 7919 + 13) % n_vocab));
  std::vector<float> got(prompt.size() * size_t(n_vocab)), want(got.size());
  const auto t0 = std::chrono::steady_clock::now();
  Status st = (*cl)->eval(prompt, 0, got.data(), true);
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE((*cpu)->eval(prompt, 0, want.data(), true).ok());
  ASSERT_TRUE(testing::all_finite(got.data(), got.size()));
  double worst = 0;
  for (size_t p = 0; p < prompt.size(); ++p) {
    const double e = relative_error(got.data() + p * n_vocab, want.data() + p * n_vocab, size_t(n_vocab));
    worst = std::max(worst, e);
    EXPECT_LT(e, kTolerance) << "prompt position " << p;
  }

  // Greedy decode on both, each feeding its own argmax back.
  std::vector<float> lg(static_cast<size_t>(n_vocab)), lc(static_cast<size_t>(n_vocab));
  std::vector<TokenId> tok_cl{argmax(std::vector<float>(got.end() - n_vocab, got.end()))};
  std::vector<TokenId> tok_cpu{argmax(std::vector<float>(want.end() - n_vocab, want.end()))};
  double decode_s = 0;
  for (int step = 0; step < 12; ++step) {
    const int pos = int(prompt.size()) + step;
    const auto a = std::chrono::steady_clock::now();
    st = (*cl)->eval(std::span(&tok_cl.back(), 1), pos, lg.data());
    decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE((*cpu)->eval(std::span(&tok_cpu.back(), 1), pos, lc.data()).ok());
    const double e = relative_error(lg.data(), lc.data(), lg.size());
    worst = std::max(worst, e);
    EXPECT_LT(e, kTolerance) << "decode position " << pos;
    tok_cl.push_back(argmax(lg));
    tok_cpu.push_back(argmax(lc));
  }
  EXPECT_EQ(tok_cl, tok_cpu);
  EXPECT_EQ(ops->runtime().bytes_copied() - copied_before, 0u) << "host<->device bytes copied during the forward";
  std::printf("[opencl] forward %-12s max relative logit error %.3g; prefill 19 tok %.1f ms, decode %.2f ms/tok, "
              "bytes copied %llu\n",
              case_name({c, 0}).c_str(), worst, std::chrono::duration<double, std::milli>(t1 - t0).count(),
              decode_s * 1e3 / 12, (unsigned long long)(ops->runtime().bytes_copied() - copied_before));
}

INSTANTIATE_TEST_SUITE_P(SmallModels, ClForwardVsCpu,
                         ::testing::Values(Case{Arch::kLlama, DType::F32}, Case{Arch::kLlama, DType::F16},
                                           Case{Arch::kLlama, DType::BF16}, Case{Arch::kLlama, DType::Q8_0},
                                           Case{Arch::kLlama, DType::Q4_0}, Case{Arch::kQwen2, DType::F32},
                                           Case{Arch::kQwen2, DType::F16}, Case{Arch::kQwen2, DType::Q8_0},
                                           Case{Arch::kQwen2, DType::Q4_0}),
                         case_name);

TEST(ClForward, RejectsBadArguments) {
  TANDEM_CL_OPS_OR_SKIP(ops);
  auto model = tandem::testing::load_or_die(tandem::testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  auto cl = ClForward::create(model, {16, 8, ops});
  ASSERT_TRUE(cl.ok());
  std::vector<float> logits(size_t(model->config().n_vocab));
  const TokenId bad = model->config().n_vocab;
  EXPECT_EQ((*cl)->eval(std::span(&bad, 1), 0, logits.data()).code(), StatusCode::kInvalidArgument);
  const TokenId ok = 1;
  EXPECT_EQ((*cl)->eval(std::span(&ok, 1), 16, logits.data()).code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*cl)->eval({}, 0, logits.data()).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem::opencl
