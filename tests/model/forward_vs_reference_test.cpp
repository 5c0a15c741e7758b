// The decoder on the cpu device (the default path) against the fp64 oracle: logits at several positions and prompt lengths,
// and identical greedy tokens, for each architecture and weight type.
#include <gtest/gtest.h>

#include <cmath>

#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/matmul/packed_weight.h"
#include "reference/reference_forward.h"
#include "runtime/session.h"
#include "tests/model/test_models.h"

namespace tandem {
namespace {

struct Case {
  Arch arch;
  DType type;
  bool tied;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return arch_name(info.param.arch) + "_" + std::string(dtype_name(info.param.type)) + (info.param.tied ? "_tied" : "");
}

// Largest |a - b| relative to the largest |b|: the scale of logits varies with the model, and
// an error budget relative to that scale is what decides the next token.
double relative_error(std::span<const float> fast, const std::vector<double>& ref) {
  double worst = 0.0, scale = 1e-30;
  for (size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::fabs(double(fast[i]) - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return worst / scale;
}

// The fast path computes in fp32 against the same (dequantized) weights as the oracle, so every
// type gets an fp32-rounding budget; the bound is loose enough for summation-order differences
// over a few thousand terms and tight enough to catch a wrong scale, nibble or rotation.
constexpr double kTolerance = 2e-4;
// Every run's KV length; past the phi3 test model's original context (32), so its LongRoPE long
// factors serve (the reference is told the same length).
constexpr int kContext = 64;
// The oracle's arithmetic keeps the KV in fp32; the f16 default and q8_0 have their own test below.
constexpr KvTypes kOracleKv{DType::F32, DType::F32};

class ForwardVsReference : public ::testing::TestWithParam<Case> {};

// Restores the matmul precisions a test changed.
struct PrecisionGuard {
  cpu::GemmPrecision gemm = cpu::gemm_precision();
  cpu::DecodePrecision decode = cpu::decode_precision();
  ~PrecisionGuard() {
    cpu::set_gemm_precision(gemm);
    cpu::set_decode_precision(decode);
  }
};

// Decode with int8 activations (Q4_0 / Q8_0 weights on AVX-512 VNNI CPUs, the default there, as
// in llama.cpp): each activation is rounded to 1/127 of its 32-column block's largest magnitude,
// so an element beside an outlier loses more than bf16's 2^-9 of itself. Measured on the test
// models: 0.8-2.1% of the largest logit, 3.5% on gemma2 (embeddings scaled by sqrt(dim), tied
// output); a wrong scale, nibble or offset gives errors of order 100%.
constexpr double kInt8DecodeTolerance = 5e-2;
constexpr double kF16KvTolerance = 2e-3;  // measured at most 8.2e-4
constexpr double kQ8KvTolerance = 5e-2;   // measured at most 2.5e-2

TEST_P(ForwardVsReference, LogitsMatchAtSeveralPositionsAndPromptLengths) {
  const Case c = GetParam();
  PrecisionGuard guard;
  // Each prompt length's tokens: the prompt, then a few decode steps (the matrix-vector path).
  struct Run {
    std::vector<TokenId> prompt, decoded;
    std::vector<std::vector<double>> want;  // the oracle's logits at every position
  };
  std::vector<Run> runs;
  {
    auto model = testing::load_or_die(testing::small_model_path(c.arch, c.type, c.tied));
    ASSERT_TRUE(model);
    const int n_vocab = model->config().n_vocab;
    for (int prompt_len : {1, 6, 19}) {
      Run r;
      for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(TokenId((i * 7919 + 13) % n_vocab));
      for (int p = prompt_len; p < prompt_len + 4; ++p) r.decoded.push_back(TokenId((p * 31 + 5) % n_vocab));
      // Once per prompt: the oracle's logits depend on neither the fast path's threads nor its
      // decode precision (half of this test's time under the sanitizers, were it per precision).
      ReferenceForward ref(model, kContext);
      for (int p = 0; p < prompt_len; ++p) r.want.push_back(ref.step(r.prompt[size_t(p)], p));
      for (size_t i = 0; i < r.decoded.size(); ++i) r.want.push_back(ref.step(r.decoded[i], prompt_len + int(i)));
      runs.push_back(std::move(r));
    }
  }
  for (auto [precision, tolerance] : {std::pair{cpu::DecodePrecision::kFp32, kTolerance},
                                      std::pair{cpu::DecodePrecision::kInt8Activations, kInt8DecodeTolerance}}) {
    if (precision == cpu::DecodePrecision::kInt8Activations && !cpu::can_pack_for_decode(c.type)) continue;  // same path
    cpu::set_decode_precision(precision);
    SCOPED_TRACE(precision == cpu::DecodePrecision::kFp32 ? "fp32 decode" : "int8-activation decode");
    auto model = testing::load_or_die(testing::small_model_path(c.arch, c.type, c.tied));
    ASSERT_TRUE(model);
    const int n_vocab = model->config().n_vocab;
    for (const Run& r : runs) {
      const int prompt_len = int(r.prompt.size());
      for (int threads : {1, 2, 3}) {
        // max_batch 8 makes the 19-token prompt run as three prefill chunks.
        auto fwd = make_cpu_forward(model, {threads, kContext, 8}, kOracleKv);
        ASSERT_TRUE(fwd.ok()) << fwd.status().message();
        // Prefill with all logits: every prompt position is checked.
        std::vector<float> logits(size_t(prompt_len) * n_vocab);
        ASSERT_TRUE((*fwd)->eval(r.prompt, 0, logits.data(), true).ok());
        for (int p = 0; p < prompt_len; ++p) {
          const double err = relative_error(std::span(logits).subspan(size_t(p) * n_vocab, size_t(n_vocab)), r.want[size_t(p)]);
          ASSERT_LT(err, tolerance) << "prompt " << prompt_len << " threads " << threads << " position " << p;
        }
        std::vector<float> step_logits(static_cast<size_t>(n_vocab));
        for (size_t i = 0; i < r.decoded.size(); ++i) {
          const int p = prompt_len + int(i);
          ASSERT_TRUE((*fwd)->eval(std::span(&r.decoded[i], 1), p, step_logits.data()).ok());
          const double err = relative_error(step_logits, r.want[size_t(p)]);
          ASSERT_LT(err, tolerance) << "decode position " << p << " threads " << threads;
        }
      }
    }
  }
}

// In the oracle's arithmetic (fp32 decode), greedy tokens are the oracle's. With int8 decode
// activations a random model's near-ties may part (its logits are checked above, within budget).
TEST_P(ForwardVsReference, GreedyTokensAreIdentical) {
  const Case c = GetParam();
  PrecisionGuard guard;
  cpu::set_decode_precision(cpu::DecodePrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(c.arch, c.type, c.tied));
  ASSERT_TRUE(model);
  std::vector<TokenId> prompt{1, 450, 4996, 17354, 1701};
  for (TokenId& t : prompt) t %= model->config().n_vocab;  // the 256-wide models' vocabulary is cut
  const int n_gen = 16;

  auto session = Session::create(model, {2, kContext, 512});
  ASSERT_TRUE(session.ok());
  std::vector<TokenId> fast;
  GenerateOptions g;
  g.n_predict = n_gen;
  g.stop_at_eog = false;
  g.sampler = SamplerOptions::greedy();
  ASSERT_TRUE((*session)->generate(prompt, g, [&](TokenId t) { fast.push_back(t); return true; }).ok());

  ReferenceForward ref(model, kContext);
  std::vector<double> logits;
  int pos = 0;
  for (TokenId t : prompt) logits = ref.step(t, pos++);
  std::vector<TokenId> slow;
  for (int i = 0; i < n_gen; ++i) {
    const TokenId next = TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin());
    slow.push_back(next);
    logits = ref.step(next, pos++);
  }
  EXPECT_EQ(fast, slow);
}

// Long prompts take the prefill GEMM, which on AVX512-BF16 CPUs rounds activations to bf16
// (8 significant bits; F16 weights too) unless fp32 is forced, and on VNNI CPUs runs Q4_0 / Q8_0
// with int8 activations on the packed weights (the default there, as decode). Every mode is
// checked against the oracle with the budget its arithmetic allows; the bf16 budget is set by
// 2^-9 relative rounding per activation (and weight) over sums of a few hundred terms.
TEST_P(ForwardVsReference, LongPromptPrefillInBothGemmPrecisions) {
  const Case c = GetParam();
  auto model = testing::load_or_die(testing::small_model_path(c.arch, c.type, c.tied));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab, prompt_len = 40;
  std::vector<TokenId> prompt;
  for (int i = 0; i < prompt_len; ++i) prompt.push_back(TokenId((i * 104729 + 7) % n_vocab));
  ReferenceForward ref(model, kContext);
  std::vector<std::vector<double>> want;
  for (int p = 0; p < prompt_len; ++p) want.push_back(ref.step(prompt[size_t(p)], p));

  PrecisionGuard guard;
  struct Mode {
    const char* name;
    cpu::GemmPrecision gemm;
    cpu::DecodePrecision quantized;  // int8: Q4_0 / Q8_0 prefill runs the packed int8 GEMM
    double tolerance;
  };
  for (const Mode& mode : {Mode{"fp32", cpu::GemmPrecision::kFp32, cpu::DecodePrecision::kFp32, kTolerance},
                           Mode{"bf16", cpu::GemmPrecision::kBf16Activations, cpu::DecodePrecision::kFp32, 3e-2},
                           Mode{"int8", cpu::GemmPrecision::kBf16Activations, cpu::DecodePrecision::kInt8Activations,
                                kInt8DecodeTolerance}}) {
    if (mode.quantized == cpu::DecodePrecision::kInt8Activations && !cpu::can_pack_for_decode(c.type)) continue;
    cpu::set_gemm_precision(mode.gemm);
    cpu::set_decode_precision(mode.quantized);
    auto fwd = make_cpu_forward(model, {2, kContext, 64}, kOracleKv);
    ASSERT_TRUE(fwd.ok());
    std::vector<float> logits(size_t(prompt_len) * n_vocab);
    ASSERT_TRUE((*fwd)->eval(prompt, 0, logits.data(), true).ok());
    for (int p = 0; p < prompt_len; ++p) {
      const double err = relative_error(std::span(logits).subspan(size_t(p) * n_vocab, size_t(n_vocab)), want[size_t(p)]);
      EXPECT_LT(err, mode.tolerance) << mode.name << " position " << p;
    }
  }
}

// The KV cache in f16 (the default, as llama.cpp) and q8_0 (-ctk/-ctv): keys and values rounded
// as they are stored, everything else in the oracle's fp32 arithmetic. Budgets, relative to the
// largest logit, from the errors measured on the test models (f16 at most 8.2e-4, q8_0 at most
// 2.5e-2): f16 rounds each element by 2^-11 of itself, q8_0 by 1/254 of its block's largest; a
// misplaced head, block or token gives errors of order 100%. Models whose heads are not a multiple
// of 32 wide cannot hold q8_0 blocks: the forward must refuse, naming the flag.
TEST_P(ForwardVsReference, KvCacheTypesStayWithinTheirBudget) {
  const Case c = GetParam();
  PrecisionGuard guard;
  cpu::set_decode_precision(cpu::DecodePrecision::kFp32);
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(c.arch, c.type, c.tied));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab, prompt_len = 11;
  std::vector<TokenId> tokens;
  for (int i = 0; i < prompt_len + 3; ++i) tokens.push_back(TokenId((i * 7919 + 3) % n_vocab));
  ReferenceForward ref(model, kContext);
  std::vector<std::vector<double>> want;
  for (int p = 0; p < prompt_len + 3; ++p) want.push_back(ref.step(tokens[size_t(p)], p));
  for (auto [kv, tolerance] : {std::pair{KvTypes{DType::F16, DType::F16}, kF16KvTolerance},
                               std::pair{KvTypes{DType::Q8_0, DType::Q8_0}, kQ8KvTolerance},
                               std::pair{KvTypes{DType::F16, DType::Q8_0}, kQ8KvTolerance}}) {
    const std::string what = std::string(dtype_name(kv.k)) + "/" + std::string(dtype_name(kv.v));
    auto fwd = make_cpu_forward(model, {2, kContext, 8}, kv);
    if ((kv.k == DType::Q8_0 || kv.v == DType::Q8_0) && model->config().head_dim % 32 != 0) {
      ASSERT_FALSE(fwd.ok()) << what << " with heads " << model->config().head_dim << " wide";
      EXPECT_NE(fwd.status().message().find("--cache-type-"), std::string::npos) << fwd.status().message();
      continue;
    }
    ASSERT_TRUE(fwd.ok()) << fwd.status().message();
    std::vector<float> logits(size_t(prompt_len) * n_vocab);
    ASSERT_TRUE((*fwd)->eval(std::span(tokens).first(size_t(prompt_len)), 0, logits.data(), true).ok());
    double worst = 0;
    for (int p = 0; p < prompt_len; ++p)
      worst = std::max(worst, relative_error(std::span(logits).subspan(size_t(p) * n_vocab, size_t(n_vocab)), want[size_t(p)]));
    std::vector<float> step(static_cast<size_t>(n_vocab));
    for (int p = prompt_len; p < prompt_len + 3; ++p) {
      ASSERT_TRUE((*fwd)->eval(std::span(&tokens[size_t(p)], 1), p, step.data()).ok());
      worst = std::max(worst, relative_error(step, want[size_t(p)]));
    }
    EXPECT_LT(worst, tolerance) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(AllArchsAndTypes, ForwardVsReference,
                         ::testing::Values(Case{Arch::kLlama, DType::F32, false}, Case{Arch::kLlama, DType::F16, false},
                                           Case{Arch::kLlama, DType::BF16, false}, Case{Arch::kLlama, DType::Q8_0, false},
                                           Case{Arch::kLlama, DType::Q4_0, false}, Case{Arch::kLlama, DType::Q4_0, true},
                                           Case{Arch::kQwen2, DType::F32, true}, Case{Arch::kQwen2, DType::F16, true},
                                           Case{Arch::kQwen2, DType::Q8_0, true}, Case{Arch::kQwen2, DType::Q4_0, false},
                                           Case{Arch::kQwen3, DType::F32, true}, Case{Arch::kQwen3, DType::Q8_0, false},
                                           Case{Arch::kPhi3, DType::F32, false}, Case{Arch::kPhi3, DType::Q4_0, false},
                                           Case{Arch::kGemma2, DType::F32, true}, Case{Arch::kGemma2, DType::Q8_0, true},
                                           Case{Arch::kGemma3, DType::F32, true}, Case{Arch::kGemma3, DType::F16, true},
                                           // The types of the model files people download (Q4_K_M is Q4_K with
                                           // Q6_K, ...), each on its own architecture.
                                           Case{Arch::kLlama, DType::Q4_K, false}, Case{Arch::kLlama, DType::Q6_K, true},
                                           Case{Arch::kQwen3, DType::Q5_K, true}, Case{Arch::kQwen3, DType::IQ4_XS, false},
                                           Case{Arch::kPhi3, DType::Q3_K, false}, Case{Arch::kGemma2, DType::Q2_K, true},
                                           Case{Arch::kGemma3, DType::Q5_0, true}, Case{Arch::kLlama, DType::Q4_1, false},
                                           Case{Arch::kLlama, DType::Q5_1, true}, Case{Arch::kLlama, DType::IQ4_NL, false}),
                         case_name);

// LongRoPE picks its factors by the run's length: within the original context (32) the short
// ones, past it the long ones. Both match the oracle told the same length, and they differ from
// each other (a run that ignored the length would match only one).
TEST(LongRope, FactorsFollowTheRunLength) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kPhi3, DType::F32, false));
  ASSERT_TRUE(model);
  ASSERT_EQ(model->config().rope_original_context, 32);
  const int n_vocab = model->config().n_vocab, n = 12;
  std::vector<TokenId> prompt;
  for (int i = 0; i < n; ++i) prompt.push_back(TokenId((i * 389 + 11) % n_vocab));
  std::vector<std::vector<float>> last;
  for (int context : {32, 64}) {
    auto fwd = make_cpu_forward(model, {2, context, 16}, kOracleKv);
    ASSERT_TRUE(fwd.ok()) << fwd.status().message();
    std::vector<float> logits(size_t(n) * n_vocab);
    ASSERT_TRUE((*fwd)->eval(prompt, 0, logits.data(), true).ok());
    ReferenceForward ref(model, context);
    for (int p = 0; p < n; ++p) {
      const std::vector<double> want = ref.step(prompt[size_t(p)], p);
      ASSERT_LT(relative_error(std::span(logits).subspan(size_t(p) * n_vocab, size_t(n_vocab)), want), kTolerance)
          << "context " << context << " position " << p;
    }
    last.emplace_back(logits.end() - n_vocab, logits.end());
  }
  double diff = 0;
  for (int i = 0; i < n_vocab; ++i) diff = std::max(diff, double(std::fabs(last[0][size_t(i)] - last[1][size_t(i)])));
  EXPECT_GT(diff, 1e-3) << "short and long factors gave the same logits";
}

}  // namespace
}  // namespace tandem
