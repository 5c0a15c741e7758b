// The hexagon device: matmuls computed by Hexagon HVX code in a DSP process (qemu-hexagon), bit
// for bit the host oracle's; what it cannot run refused with the reason; a whole model's greedy
// tokens through it equal to the cpu's at every strategy; and a DSP killed mid-run leaves the
// tokens unchanged (the runtime reruns the failed work on the GPU's role).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/quant.h"
#include "model/quantize/quantize.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/hexagon/hexagon_device.h"
#include "devices/hexagon/weight_repack.h"
#include "devices/registry.h"
#include "runtime/graph_forward.h"
#include "runtime/greedy_parting.h"
#include "runtime/hetero_forward.h"
#include "runtime/sampler.h"
#include "tests/hexagon/hexagon_test_support.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem {
namespace {

using devices::HexagonDevice;
using hexagon::testing::same_float;

std::unique_ptr<HexagonDevice> open_or_die(std::shared_ptr<const Model> model) {
  auto d = HexagonDevice::open(std::move(model));
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? std::move(*d) : nullptr;
}

// The oracle for rows [b, e) of w: its DSP blocks (repack_rows) times x quantized per block.
std::vector<float> oracle(const Weight& w, int64_t b, int64_t e, const std::vector<float>& x, uint32_t m) {
  const hexagon::WeightFormat f = devices::hexagon_npu::dsp_format(w.type);
  std::vector<uint8_t> blocks(hexagon::weight_bytes(f, uint32_t(e - b), uint32_t(w.cols)));
  EXPECT_TRUE(devices::hexagon_npu::repack_rows(w, b, e, blocks.data()).ok());
  auto q = hexagon::quantize_activations(x, m, uint32_t(w.cols));
  EXPECT_TRUE(q.ok());
  auto y = hexagon::matmul(f, blocks, uint32_t(e - b), *q);
  EXPECT_TRUE(y.ok());
  return *y;
}

class HexagonMatmul : public ::testing::TestWithParam<DType> {};

// A weight-centric share (rows [16, 48) of w_up) at 3 rows: only its columns are written, each the
// oracle's bits; the q8_0 / q4_0 blocks go as the model carries them, f16 and q4_k via q8_0.
TEST_P(HexagonMatmul, WritesItsColumnsBitForBitTheOracle) {
  TANDEM_HEXAGON_OR_SKIP();
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, GetParam()));
  ASSERT_TRUE(model);
  auto d = open_or_die(model);
  ASSERT_TRUE(d);
  const Weight& w = model->layers()[1].w_up;
  const uint32_t m = 3;
  const int64_t b = 16, e = 48;
  std::vector<float> x = hexagon::testing::random_activations(m, uint32_t(w.cols), 11);
  const int64_t ldy = w.rows + 5;
  std::vector<float> y(size_t(m * ldy), -7.0f);
  graph::OpCall c = graph::OpCall::matmul(&w, b, e, x.data(), m, w.cols, y.data(), ldy);
  EXPECT_FALSE(d->supports(c)) << "static shapes: nothing runs before prepare";
  auto p = d->prepare(graph::GraphSpec::of(c));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE(p->cached);
  EXPECT_TRUE(d->prepare(graph::GraphSpec::of(c))->cached);
  ASSERT_TRUE(d->supports(c));
  auto done = d->submit(c);
  ASSERT_TRUE(done.ok()) << done.status().message();
  ASSERT_TRUE((*done)->wait().ok()) << (*done)->wait().message();
  EXPECT_EQ(d->dsp_calls(), 2u) << "quantize, then the multiply";
  const std::vector<float> want = oracle(w, b, e, x, m);
  for (uint32_t i = 0; i < m; ++i) {
    for (int64_t col = 0; col < ldy; ++col) {
      const float got = y[size_t(i * ldy + col)];
      if (col < b || col >= e) {
        EXPECT_EQ(got, -7.0f) << "row " << i << " column " << col << " is not this share's";
      } else {
        EXPECT_TRUE(same_float(got, want[size_t(i) * size_t(e - b) + size_t(col - b)]))
            << "row " << i << " column " << col << ": " << got;
      }
    }
  }
  // The f32 result is not the DSP's invention: it is close to the fp32 product.
  std::vector<float> deq(size_t(w.cols));
  dequantize_row(w.type, w.data + size_t(b) * w.row_bytes(), deq.data(), deq.size());
  double ref = 0, mag = 0;
  for (int64_t k = 0; k < w.cols; ++k) {
    ref += double(deq[size_t(k)]) * x[size_t(k)];
    mag += std::abs(double(deq[size_t(k)]) * x[size_t(k)]);
  }
  EXPECT_NEAR(y[size_t(b)], ref, 0.02 * mag);
}

INSTANTIATE_TEST_SUITE_P(Types, HexagonMatmul, ::testing::Values(DType::Q8_0, DType::Q4_0, DType::F16, DType::Q4_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(HexagonDevice, RefusesWhatItCannotRunWithTheReason) {
  TANDEM_HEXAGON_OR_SKIP();
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto d = open_or_die(model);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->caps().kind, devices::DeviceKind::kNpu);
  EXPECT_FALSE(d->caps().dynamic_shapes);
  EXPECT_NE(d->caps().detail.find("Hexagon v66 HVX"), std::string::npos) << d->caps().detail;
  EXPECT_NE(d->static_graphs(), nullptr);
  graph::GraphSpec norm;
  norm.kind = graph::OpKind::kRmsNorm;
  norm.weight = &model->layers()[0].attn_norm;
  norm.m = 4;
  norm.cols = model->config().dim;
  auto r = d->prepare(norm);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no DSP kernel for rmsnorm"), std::string::npos) << r.status().message();
  // An input width the blocks of 32 do not divide.
  Weight odd = model->layers()[0].w_up;
  odd.cols = 40;
  graph::GraphSpec s;
  s.weight = &odd;
  s.row_begin = 0;
  s.row_end = 8;
  s.m = 1;
  s.cols = 8;
  r = d->prepare(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input width 40 is not a multiple of the DSP's block (32)"), std::string::npos)
      << r.status().message();
  // Work for a shape never prepared.
  std::vector<float> x(size_t(model->config().dim)), y(size_t(model->layers()[0].wq.rows));
  const Weight& wq = model->layers()[0].wq;
  auto sub = d->submit(graph::OpCall::matmul(&wq, 0, wq.rows, x.data(), 1, wq.cols, y.data(), wq.rows));
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.status().message().find("no prepared graph"), std::string::npos) << sub.status().message();
}

TEST(HexagonDevice, TheRegistryListsItWithItsIsa) {
  TANDEM_HEXAGON_OR_SKIP();
  ASSERT_EQ(devices::device_kind_of("hexagon"), devices::DeviceKind::kNpu);
  bool listed = false;
  for (const devices::DeviceListing& l : devices::list_devices(nullptr, 1)) {
    if (l.name != "hexagon") continue;
    listed = true;
    EXPECT_TRUE(l.available) << l.unavailable;
    EXPECT_NE(l.caps.detail.find("v66 HVX-128"), std::string::npos) << l.caps.detail;
  }
  EXPECT_TRUE(listed);
}

// Greedy generation: prompt (prefilled in chunks), then n_gen single-token steps; every step's
// logits kept.
struct Generation {
  std::vector<TokenId> tokens;
  std::vector<std::vector<float>> logits;
};

Generation greedy(Forward& f, const std::vector<TokenId>& prompt, int n_gen, int n_vocab,
                  const std::function<void(int)>& before_step = nullptr) {
  Generation g;
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  Status st = f.eval(prompt, 0, logits.data());
  EXPECT_TRUE(st.ok()) << st.message();
  int pos = int(prompt.size());
  for (int i = 0; i < n_gen; ++i) {
    g.logits.push_back(logits);
    if (before_step) before_step(i);
    const TokenId t = argmax(logits);
    g.tokens.push_back(t);
    st = f.eval(std::span(&t, 1), pos++, logits.data());
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return g;
}

std::vector<TokenId> test_prompt(int n, int n_vocab) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(TokenId((i * 7919 + 3) % n_vocab));
  return p;
}

HeteroOptions hexagon_options(Strategy s, std::vector<std::string> devices) {
  HeteroOptions o;
  o.devices = std::move(devices);
  o.partition.strategy = s;
  o.partition.gpu_share = 0.5;
  o.partition.standard_lengths = {4, 8};  // small static shapes so short prompts exercise every path
  o.context = 64;
  o.max_batch = 16;
  return o;
}

// The cpu's arithmetic nearest the DSP's: int8 activations per block of 32 against the weights'
// blocks (cpu::DecodePrecision::kInt8Activations, the cpu's default: llama.cpp's Q8_0
// activations). Not the same bits: the cpu keeps each activation block's fp32 scale where the DSP
// rounds it to fp16, and weights other than Q4_0 / Q8_0 the DSP takes requantized to Q8_0.
void use_nearest_cpu_arithmetic() {
  cpu::set_decode_precision(cpu::DecodePrecision::kInt8Activations);
  cpu::set_gemm_precision(cpu::GemmPrecision::kFastest);
}

// How far a hexagon run's logits may lie from the cpu's, over the cpu's largest |logit|, where
// their greedy tokens part: int8 activations (2^-8 of each block's largest |x|) and, for weights
// requantized to Q8_0, 2^-8 of each block's largest |w|, through every layer of a random model.
// A wrong row, scale or split shows as an error of the logits' own size (greedy_parting.h).
constexpr double kIntegerLogitBudget = 5e-2;

// Tokens equal to the cpu's, or parting at a near-tie with the logits within the budget there.
void expect_cpu_tokens(Forward& cpu_forward, Forward& hexagon, const std::vector<TokenId>& prompt,
                       const Generation& want, const Generation& got, int n_vocab, const std::string& what) {
  if (got.tokens == want.tokens) return;
  Result<GreedyParting> p = examine_parting(cpu_forward, hexagon, prompt, want.tokens, got.tokens, n_vocab);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_LE(p->logit_error, kIntegerLogitBudget) << what << ": parted from the cpu at token " << p->index
                                                 << " with the logits off by " << p->logit_error;
  EXPECT_LE(p->margin, 2 * kIntegerLogitBudget) << what << ": the cpu's top two were not near a tie";
}

// The DSP's run is the oracle's, bit for bit: same tokens, every step's logits in the same bits.
void expect_oracle_bits(const Generation& dsp, const Generation& oracle, const std::string& what) {
  ASSERT_EQ(dsp.tokens, oracle.tokens) << what;
  ASSERT_EQ(dsp.logits.size(), oracle.logits.size());
  for (size_t step = 0; step < dsp.logits.size(); ++step) {
    for (size_t v = 0; v < dsp.logits[step].size(); ++v) {
      ASSERT_TRUE(same_float(dsp.logits[step][v], oracle.logits[step][v]))
          << what << ": step " << step << " logit " << v << ": " << dsp.logits[step][v] << " vs "
          << oracle.logits[step][v];
    }
  }
}

class HexagonStrategies : public ::testing::TestWithParam<std::tuple<Strategy, DType>> {};

TEST_P(HexagonStrategies, TokensAreTheOraclesBitForBitAndTheCpus) {
  TANDEM_HEXAGON_OR_SKIP();
  const auto [strategy, type] = GetParam();
  use_nearest_cpu_arithmetic();
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, type));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  // 11 prompt tokens: 8 standard + 3 dynamic; 19 spans two chunks with max_batch 16.
  for (int prompt_len : {11, 19}) {
    const std::string what = std::string(strategy_name(strategy)) + " prompt " + std::to_string(prompt_len);
    const std::vector<TokenId> prompt = test_prompt(prompt_len, n_vocab);
    auto cpu_only = make_cpu_forward(model, {2, 64, 16});
    ASSERT_TRUE(cpu_only.ok());
    const Generation want = greedy(**cpu_only, prompt, 8, n_vocab);
    auto oracle = HeteroForward::create(model, hexagon_options(strategy, {"cpu", "hexagon-ref"}));
    ASSERT_TRUE(oracle.ok()) << oracle.status().message();
    const Generation ref = greedy(**oracle, prompt, 8, n_vocab);
    auto hetero = HeteroForward::create(model, hexagon_options(strategy, {"cpu", "hexagon"}));
    ASSERT_TRUE(hetero.ok()) << hetero.status().message();
    const Generation got = greedy(**hetero, prompt, 8, n_vocab);
    EXPECT_GT((*hetero)->stats().busy_seconds.count("hexagon"), 0u) << "the DSP ran the strategy's share";
    EXPECT_EQ((*hetero)->run_fallbacks(), 0u);
    expect_oracle_bits(got, ref, what);
    expect_cpu_tokens(**cpu_only, **hetero, prompt, want, got, n_vocab, what);
  }
}

std::string strategy_case_name(const ::testing::TestParamInfo<std::tuple<Strategy, DType>>& info) {
  std::string n = std::string(strategy_name(std::get<0>(info.param))) + "_" + std::string(dtype_name(std::get<1>(info.param)));
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

// Every strategy on the Q4_0 model; every other weight type the DSP takes (Q8_0 as carried, F16
// and Q4_K requantized to Q8_0) at the strategies that split a matmul differently (whole, by
// weight rows, by activation rows, both): the CI budget pays for these, not for the full cross.
INSTANTIATE_TEST_SUITE_P(
    EveryStrategy, HexagonStrategies,
    ::testing::Combine(::testing::Values(Strategy::kNpuOnly, Strategy::kLayer, Strategy::kWeightCentric,
                                         Strategy::kActivationCentric, Strategy::kMultiTensor, Strategy::kHybrid,
                                         Strategy::kPadding, Strategy::kOnlinePrepare, Strategy::kNpuPipe),
                       ::testing::Values(DType::Q4_0)),
    strategy_case_name);
INSTANTIATE_TEST_SUITE_P(
    EveryType, HexagonStrategies,
    ::testing::Combine(::testing::Values(Strategy::kNpuOnly, Strategy::kWeightCentric, Strategy::kActivationCentric,
                                         Strategy::kHybrid),
                       ::testing::Values(DType::Q8_0, DType::F16, DType::Q4_K)),
    strategy_case_name);

// opencl in the GPU's role, the DSP in the NPU's.
TEST(HexagonWithOpencl, TokensAreTheOraclesBitForBitAndTheCpus) {
  TANDEM_HEXAGON_OR_SKIP();
  if (!devices::open_device("opencl", nullptr, 1).ok()) TANDEM_OPENCL_MISSING("no OpenCL device");
  use_nearest_cpu_arithmetic();
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  const std::vector<TokenId> prompt = test_prompt(11, n_vocab);
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const Generation want = greedy(**cpu_only, prompt, 8, n_vocab);
  for (Strategy s : {Strategy::kWeightCentric, Strategy::kActivationCentric, Strategy::kHybrid}) {
    auto oracle = HeteroForward::create(model, hexagon_options(s, {"opencl", "hexagon-ref"}));
    ASSERT_TRUE(oracle.ok()) << oracle.status().message();
    const Generation ref = greedy(**oracle, prompt, 8, n_vocab);
    auto hetero = HeteroForward::create(model, hexagon_options(s, {"opencl", "hexagon"}));
    ASSERT_TRUE(hetero.ok()) << hetero.status().message();
    const Generation got = greedy(**hetero, prompt, 8, n_vocab);
    EXPECT_GT((*hetero)->stats().busy_seconds.count("hexagon"), 0u);
    EXPECT_GT((*hetero)->stats().busy_seconds.count("opencl"), 0u);
    expect_oracle_bits(got, ref, strategy_name(s));
    expect_cpu_tokens(**cpu_only, **hetero, prompt, want, got, n_vocab, strategy_name(s));
  }
}

// Largest |a - b| over the largest |b|.
double logit_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, mag = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, double(std::abs(a[i] - b[i])));
    mag = std::max(mag, double(std::abs(b[i])));
  }
  return err / mag;
}

// The real model of ../shared (f32 weights, requantized to Q8_0 for the DSP; an FFN width of
// 172): every matmul whose input the blocks of 32 divide runs on the DSP, the down projection
// (172 wide) on the cpu. Its runs are the oracle's bit for bit. This tiny trained model is
// chaotic under any 8-bit arithmetic -- the cpu itself, on the same layers quantized to Q8_0 with
// int8 activations, parts from its fp32 tokens within a few tokens -- so against the cpu the DSP's
// logits are held to the error the cpu's own 8-bit arithmetic makes on that model.
TEST(HexagonStories260K, RunsAreTheOraclesBitForBitAndNoFurtherFromFp32ThanTheCpusQ8_0) {
  TANDEM_HEXAGON_OR_SKIP();
  const std::string f32_path = testing::shared_dir() + "/testdata/models/stories260K.gguf";
  const std::string q8_path = testing::process_temp_dir() + "/stories260K-layers-q8_0.gguf";
  QuantizeOptions qo;
  qo.pure = true;
  qo.leave_output_tensor = true;
  qo.token_embedding_type = DType::F32;
  ASSERT_TRUE(quantize_model(f32_path, q8_path, "q8_0", qo).ok());
  auto model = testing::load_or_die(f32_path);
  auto q8_model = testing::load_or_die(q8_path);
  ASSERT_TRUE(model && q8_model);
  const int n_vocab = model->config().n_vocab;
  const std::vector<TokenId> prompt = {1, 403, 407, 261, 378, 381, 300, 320, 350, 260, 445};
  cpu::set_decode_precision(cpu::DecodePrecision::kFp32);
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto cpu_fp32 = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_fp32.ok());
  const Generation fp32 = greedy(**cpu_fp32, prompt, 12, n_vocab);
  use_nearest_cpu_arithmetic();
  auto cpu_q8 = make_cpu_forward(q8_model, {2, 64, 16});
  ASSERT_TRUE(cpu_q8.ok());
  // The cpu's 8-bit error, step by step along the fp32 tokens (teacher-forced: both read the same
  // tokens, so the error is the arithmetic's, not a parted generation's).
  auto forced_logits = [&](Forward& f) {
    std::vector<std::vector<float>> out;
    std::vector<float> row(static_cast<size_t>(n_vocab));
    EXPECT_TRUE(f.eval(prompt, 0, row.data()).ok());
    out.push_back(row);
    int pos = int(prompt.size());
    for (size_t i = 0; i + 1 < fp32.tokens.size(); ++i) {
      EXPECT_TRUE(f.eval(std::span(&fp32.tokens[i], 1), pos++, row.data()).ok());
      out.push_back(row);
    }
    return out;
  };
  const auto q8_logits = forced_logits(**cpu_q8);
  double cpu_q8_error = 0;
  for (size_t i = 0; i < q8_logits.size(); ++i) cpu_q8_error = std::max(cpu_q8_error, logit_error(q8_logits[i], fp32.logits[i]));
  EXPECT_GT(cpu_q8_error, 0.0);
  for (Strategy s : {Strategy::kNpuOnly, Strategy::kWeightCentric, Strategy::kHybrid}) {
    auto oracle = HeteroForward::create(model, hexagon_options(s, {"cpu", "hexagon-ref"}));
    ASSERT_TRUE(oracle.ok()) << oracle.status().message();
    const Generation ref = greedy(**oracle, prompt, 12, n_vocab);
    auto hetero = HeteroForward::create(model, hexagon_options(s, {"cpu", "hexagon"}));
    ASSERT_TRUE(hetero.ok()) << hetero.status().message();
    const Generation got = greedy(**hetero, prompt, 12, n_vocab);
    EXPECT_GT((*hetero)->stats().busy_seconds.count("hexagon"), 0u);
    EXPECT_GT((*hetero)->fallbacks(), 0) << "the 172-wide down projection cannot go to the DSP";
    expect_oracle_bits(got, ref, strategy_name(s));
    const auto dsp_logits = forced_logits(**hetero);
    double dsp_error = 0;
    for (size_t i = 0; i < dsp_logits.size(); ++i) dsp_error = std::max(dsp_error, logit_error(dsp_logits[i], fp32.logits[i]));
    EXPECT_LE(dsp_error, 1.5 * cpu_q8_error) << strategy_name(s) << ": the DSP's logits against the cpu's fp32";
    std::printf("%s: DSP logits within %.3g of the cpu's fp32, the cpu's own Q8_0 within %.3g\n", strategy_name(s),
                dsp_error, cpu_q8_error);
  }
}

// This process's DSP children (qemu-hexagon running tandem_hexagon_dsp), from /proc: what a user's
// kill or the OOM killer would pick, without asking the runtime.
std::vector<pid_t> dsp_children() {
  std::vector<pid_t> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    for (pid_t pid; children >> pid;) {
      std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
      const std::string line((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      if (line.find("tandem_hexagon_dsp") != std::string::npos) out.push_back(pid);
    }
  }
  return out;
}

class HexagonDspDeath : public ::testing::TestWithParam<int> {};

// The DSP process killed (SIGKILL) or hung (SIGSTOP: the call's bounded timeout fires and the
// device kills it) between two decode steps: the failed matmul reruns on the cpu, every later
// one goes there, and the tokens are the cpu's all the same.
TEST_P(HexagonDspDeath, TheTokensStayTheCpus) {
  TANDEM_HEXAGON_OR_SKIP();
  const int sig = GetParam();
  use_nearest_cpu_arithmetic();
  if (sig == SIGSTOP) setenv("TANDEM_HEXAGON_CALL_TIMEOUT_MS", "300", 1);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  const std::vector<TokenId> prompt = test_prompt(11, n_vocab);
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const std::vector<TokenId> want = greedy(**cpu_only, prompt, 10, n_vocab).tokens;
  ASSERT_TRUE(dsp_children().empty());
  auto hetero = HeteroForward::create(model, hexagon_options(Strategy::kNpuOnly, {"cpu", "hexagon"}));
  unsetenv("TANDEM_HEXAGON_CALL_TIMEOUT_MS");
  ASSERT_TRUE(hetero.ok()) << hetero.status().message();
  const std::vector<TokenId> got = greedy(**hetero, prompt, 10, n_vocab, [&](int step) {
    if (step != 4) return;
    const std::vector<pid_t> dsp = dsp_children();
    ASSERT_EQ(dsp.size(), 1u);
    ASSERT_EQ(kill(dsp[0], sig), 0);
  }).tokens;
  EXPECT_EQ(got, want);
  EXPECT_GT((*hetero)->run_fallbacks(), 0u) << "the call the DSP never answered ran again on the cpu";
  if (sig == SIGSTOP) {
    EXPECT_TRUE(dsp_children().empty()) << "the hung DSP was killed and reaped";
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, HexagonDspDeath, ::testing::Values(SIGKILL, SIGSTOP),
                         [](const auto& info) { return std::string(info.param == SIGKILL ? "Killed" : "Hung"); });

}  // namespace
}  // namespace tandem
