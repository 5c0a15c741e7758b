// Every partition strategy, executed for real on the opencl + npu devices and merged, must
// generate exactly the tokens the cpu alone generates.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/graph_forward.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/registry.h"
#include "runtime/hetero_forward.h"
#include "runtime/sampler.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem {
namespace {

bool opencl_available() {
  static const bool ok = devices::open_device("opencl", nullptr, 1).ok();
  return ok;
}

// Greedy generation: prompt (prefilled in chunks), then n_gen single-token steps.
template <class Forward>
std::vector<TokenId> greedy(Forward& f, const std::vector<TokenId>& prompt, int n_gen, int n_vocab) {
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  std::vector<TokenId> out;
  EXPECT_TRUE(f.eval(prompt, 0, logits.data()).ok());
  int pos = int(prompt.size());
  for (int i = 0; i < n_gen; ++i) {
    const TokenId t = argmax(logits);
    out.push_back(t);
    Status st = f.eval(std::span(&t, 1), pos++, logits.data());
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return out;
}

HeteroOptions small_options(Strategy s) {
  HeteroOptions o;
  o.devices = {"opencl", "npu"};  // a set below may replace it
  o.partition.strategy = s;
  o.partition.gpu_share = 0.5;
  o.partition.standard_lengths = {4, 8};  // small static shapes so short prompts exercise every path
  o.context = 64;
  o.max_batch = 16;
  return o;
}

class Strategies : public ::testing::TestWithParam<std::tuple<Strategy, DType>> {};

TEST_P(Strategies, GreedyOutputEqualsCpuOnly) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  const auto [strategy, type] = GetParam();
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, type));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  // 11 prompt tokens: 8 standard + 3 dynamic; 19 spans two chunks with max_batch 16.
  for (int prompt_len : {11, 19}) {
    std::vector<TokenId> prompt;
    for (int i = 0; i < prompt_len; ++i) prompt.push_back(TokenId((i * 7919 + 3) % n_vocab));
    auto cpu_only = make_cpu_forward(model, {2, 64, 16});
    ASSERT_TRUE(cpu_only.ok());
    const std::vector<TokenId> want = greedy(**cpu_only, prompt, 8, n_vocab);
    auto hetero = HeteroForward::create(model, small_options(strategy));
    ASSERT_TRUE(hetero.ok()) << hetero.status().message();
    const std::vector<TokenId> got = greedy(**hetero, prompt, 8, n_vocab);
    EXPECT_EQ(got, want) << strategy_name(strategy) << " prompt " << prompt_len;
    // Strategies that put work on the NPU did so (unless the weight type sends it to the GPU).
    const bool uses_npu = strategy != Strategy::kGpuOnly;
    if (uses_npu && type != DType::F32) {
      EXPECT_GT((*hetero)->stats().busy_seconds.count("npu"), 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, Strategies,
    ::testing::Combine(::testing::Values(Strategy::kGpuOnly, Strategy::kNpuOnly, Strategy::kLayer, Strategy::kWeightCentric,
                                         Strategy::kActivationCentric, Strategy::kMultiTensor, Strategy::kHybrid,
                                         Strategy::kPadding, Strategy::kOnlinePrepare, Strategy::kNpuPipe),
                       ::testing::Values(DType::Q4_0, DType::Q8_0, DType::F32)),
    [](const auto& info) {
      std::string n = std::string(strategy_name(std::get<0>(info.param))) + "_" + std::string(dtype_name(std::get<1>(info.param)));
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// Devices by role, not by name: any set runs the decoder, every strategy over it gives the tokens
// the cpu alone gives, and work lands on the devices the roles name (the cpu takes the GPU's role
// where there is no GPU; without an npu every op runs on the GPU's device).
class DeviceSets : public ::testing::TestWithParam<std::tuple<std::string, Strategy>> {};

TEST_P(DeviceSets, GreedyOutputEqualsCpuOnly) {
  const auto [set, strategy] = GetParam();
  const bool with_gpu = set.find("opencl") != std::string::npos, with_npu = set.find("npu") != std::string::npos;
  if (with_gpu && !opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 11; ++i) prompt.push_back(TokenId((i * 7919 + 3) % n_vocab));
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const std::vector<TokenId> want = greedy(**cpu_only, prompt, 6, n_vocab);
  HeteroOptions o = small_options(strategy);
  o.devices.clear();
  for (size_t at = 0; at <= set.size();) {
    const size_t comma = std::min(set.find(',', at), set.size());
    o.devices.push_back(set.substr(at, comma - at));
    at = comma + 1;
  }
  auto hetero = HeteroForward::create(model, o);
  ASSERT_TRUE(hetero.ok()) << hetero.status().message();
  EXPECT_EQ(greedy(**hetero, prompt, 6, n_vocab), want) << set << " " << strategy_name(strategy);
  const std::map<std::string, double>& busy = (*hetero)->stats().busy_seconds;
  const std::string gpu_role = with_gpu ? "opencl" : "cpu";
  EXPECT_GT(busy.count(gpu_role), 0u) << gpu_role << " takes the GPU's role";
  EXPECT_EQ(busy.count("npu") > 0, with_npu && strategy != Strategy::kGpuOnly) << "the npu runs what the strategy gives it";
  if (with_gpu) {
    EXPECT_EQ(busy.count("cpu"), 0u) << "the cpu only takes what the GPU cannot run";
  }
}

INSTANTIATE_TEST_SUITE_P(
    AnySet, DeviceSets,
    ::testing::Combine(::testing::Values("cpu,npu", "cpu,opencl,npu", "cpu,opencl"),
                       ::testing::Values(Strategy::kGpuOnly, Strategy::kNpuOnly, Strategy::kWeightCentric,
                                         Strategy::kActivationCentric, Strategy::kHybrid, Strategy::kNpuPipe)),
    [](const auto& info) {
      std::string n = std::get<0>(info.param) + "_" + std::string(strategy_name(std::get<1>(info.param)));
      for (char& ch : n)
        if (ch == '-' || ch == ',') ch = '_';
      return n;
    });

// Every architecture's ops (GeGLU, soft-caps, sliding windows, post-norms, fused weights split at
// load) run split across all three devices with the tokens the cpu alone gives.
class ArchOnEveryDevice : public ::testing::TestWithParam<Arch> {};

TEST_P(ArchOnEveryDevice, HybridGreedyOutputEqualsCpuOnly) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(GetParam(), DType::Q8_0, GetParam() != Arch::kPhi3));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 11; ++i) prompt.push_back(TokenId((i * 7919 + 3) % n_vocab));
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  HeteroOptions o = small_options(Strategy::kHybrid);
  o.devices = {"cpu", "opencl", "npu"};
  auto hetero = HeteroForward::create(model, o);
  ASSERT_TRUE(hetero.ok()) << hetero.status().message();
  EXPECT_EQ(greedy(**hetero, prompt, 6, n_vocab), greedy(**cpu_only, prompt, 6, n_vocab)) << arch_name(GetParam());
}

INSTANTIATE_TEST_SUITE_P(NewArchitectures, ArchOnEveryDevice, ::testing::Values(Arch::kPhi3, Arch::kGemma2, Arch::kGemma3),
                         [](const auto& info) { return arch_name(info.param); });

// An op the GPU's device does not run goes to the next device of the set that does, and the run
// says so; with no device left, the run fails naming the op.
TEST(DeviceSets, WhatTheGpuCannotRunGoesToTheCpu) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  PartitionOptions p;
  p.gpu = "opencl";
  p.npu = "npu";
  p.fallbacks = {"cpu"};
  p.strategy = Strategy::kGpuOnly;
  // An "opencl" that refuses rmsnorm: the cpu takes those, everything else stays.
  SupportsFn supports = [](const std::string& device, const graph::OpCall& c) {
    return !(device == "opencl" && c.kind == graph::OpKind::kRmsNorm);
  };
  Partitioner part(p, PadScratch{}, [](const graph::GraphSpec&) { return true; }, supports);
  MemoryPool pool;
  graph::BufferPlan plan(pool, model->config(), 4, 16);
  pool.allocate_address_space_only();
  const graph::Buffers b = plan.bind(pool);
  TaskGraph g;
  std::vector<int> after;
  std::vector<float> logits(size_t(model->config().n_vocab));
  int norms = 0;
  for (const graph::OpCall& op : graph::build_forward(*model, b, 4, 0, logits.data(), false)) {
    norms += op.kind == graph::OpKind::kRmsNorm;
    after = part.lower(op, graph::is_layer_matmul(*model, op), after, g, graph::op_kind_name(op.kind));
  }
  int on_cpu = 0;
  for (const Task& t : g.tasks()) {
    if (t.device == "cpu") {
      ++on_cpu;
      EXPECT_EQ(t.call->kind, graph::OpKind::kRmsNorm) << t.label;
    }
  }
  EXPECT_EQ(on_cpu, norms);
  EXPECT_EQ(part.placed_elsewhere(), uint64_t(norms));
  EXPECT_NE(part.first_placement().find("on cpu (opencl does not support it)"), std::string::npos) << part.first_placement();
  EXPECT_TRUE(part.error().empty()) << part.error();

  // Without the cpu in the set nothing can take them: an error naming the op.
  p.fallbacks.clear();
  Partitioner alone(p, PadScratch{}, [](const graph::GraphSpec&) { return true; }, supports);
  TaskGraph g2;
  after.clear();
  for (const graph::OpCall& op : graph::build_forward(*model, b, 4, 0, logits.data(), false))
    after = alone.lower(op, graph::is_layer_matmul(*model, op), after, g2, graph::op_kind_name(op.kind));
  EXPECT_NE(alone.error().find("no device of the set runs rmsnorm"), std::string::npos) << alone.error();
}

// The shared pool is mapped by both devices: no strategy copies a byte between them. Padding
// happens in place, in the rows the activation slots hold past the chunk; only when a slot has
// no room left (a chunk that ends near max_batch) is a piece staged through the scratch.
TEST(Strategies, NoStrategyCopiesBytesWhenTheSlotsHaveRoomToPad) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  const std::vector<TokenId> prompt(11, 42);  // 8 standard rows + 3 padded to 4 at rows 8..11
  std::vector<float> logits(static_cast<size_t>(model->config().n_vocab));
  for (const std::string& name : strategy_names()) {
    HeteroOptions o = small_options(*strategy_from_name(name));
    auto h = HeteroForward::create(model, o);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE((*h)->eval(prompt, 0, logits.data()).ok());
    const std::vector<TokenId> one{7};
    ASSERT_TRUE((*h)->eval(one, 11, logits.data()).ok());
    const ExecutionReport r = (*h)->execution_report();
    EXPECT_EQ(r.host_bytes_copied, 0u) << name;
    EXPECT_EQ(r.device_bytes_copied, 0u) << name << ": the opencl device mapped the pool without shadow copies";
    // The npu's fp16 staging is counted wherever it ran: the pool holds fp32 activations.
    const bool npu_ran = r.devices.count("npu") && r.devices.at("npu").tasks > 0;
    EXPECT_EQ(r.device_bytes_converted > 0, npu_ran) << name << ": " << r.device_bytes_converted << " bytes converted";
    EXPECT_EQ(r.activation_slots, 13u) << name << ": 11 activation slots + 2 padding scratch";
    EXPECT_EQ(r.slot_layers, model->config().n_layers);
  }
}

TEST(Strategies, PaddingStagesThroughTheScratchOnlyWhenTheSlotIsFull) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 11; ++i) prompt.push_back(TokenId(i * 31 + 5));
  HeteroOptions o = small_options(Strategy::kPadding);
  o.max_batch = 11;  // rows 8..10 pad to 4 rows, 8..11: one past the slots
  auto h = HeteroForward::create(model, o);
  ASSERT_TRUE(h.ok());
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  ASSERT_TRUE((*h)->eval(prompt, 0, logits.data()).ok());
  EXPECT_GT((*h)->stats().host_bytes_copied, 0u);
  EXPECT_NE((*h)->last_graph().dump().find("pad 3->4 in"), std::string::npos) << (*h)->last_graph().dump();
  auto again = HeteroForward::create(model, o);
  ASSERT_TRUE(again.ok());
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  EXPECT_EQ(greedy(**again, prompt, 4, n_vocab), greedy(**cpu_only, prompt, 4, n_vocab));
}

TEST(Strategies, OnlinePrepareChargesOneGraphBuildPerNewLength) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  auto h = HeteroForward::create(model, small_options(Strategy::kOnlinePrepare));
  ASSERT_TRUE(h.ok());
  std::vector<float> logits(static_cast<size_t>(model->config().n_vocab));
  ASSERT_TRUE((*h)->eval(std::vector<TokenId>(5, 7), 0, logits.data()).ok());
  const double after_first = (*h)->prepare_seconds();
  EXPECT_GT(after_first, 0.0);
  ASSERT_TRUE((*h)->eval(std::vector<TokenId>(5, 7), 0, logits.data()).ok());  // same length: cached
  EXPECT_EQ((*h)->prepare_seconds(), after_first);
  ASSERT_TRUE((*h)->eval(std::vector<TokenId>(6, 7), 0, logits.data()).ok());  // a new length: built again
  EXPECT_GT((*h)->prepare_seconds(), after_first);
}

// Fast sync polls a device's completion flag only where a core is free for it: a device that
// computes on every host core (PoCL's CPU OpenCL) is waited on blocking, unless polling is forced.
// Every way gives the same tokens.
TEST(Strategies, BothSyncProtocolsGiveTheSameTokensAndFastSyncPollsWhereACoreIsFree) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  const std::vector<TokenId> prompt{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  std::vector<std::vector<TokenId>> outs;
  struct Way {
    SyncMode mode;
    bool force_poll;
  };
  for (Way way : {Way{SyncMode::kBlocking, false}, Way{SyncMode::kFast, false}, Way{SyncMode::kFast, true}}) {
    HeteroOptions o = small_options(Strategy::kHybrid);
    o.sync = way.mode;
    o.poll_host_devices = way.force_poll;
    auto h = HeteroForward::create(model, o);
    ASSERT_TRUE(h.ok());
    outs.push_back(greedy(**h, prompt, 6, n_vocab));
    auto gpu = devices::open_device("opencl", model, 2);
    ASSERT_TRUE(gpu.ok());
    const bool gpu_on_host_cores = (*gpu)->caps().computes_on_host_cores;
    const DriverStats& s = (*h)->stats();
    if (way.mode == SyncMode::kBlocking) {
      EXPECT_EQ(s.fast_waits + s.blocking_no_free_core + s.blocking_by_choice, 0u);
      EXPECT_EQ((*h)->execution_report().flag_devices, "");
    } else if (way.force_poll || !gpu_on_host_cores) {
      EXPECT_GT(s.fast_waits, 0u) << "the measured choice probes the fast protocol";
      EXPECT_EQ((*h)->execution_report().flag_devices, "opencl") << "the GPU raises a flag in the pool; the host polls it";
    } else {
      EXPECT_EQ(s.fast_waits, 0u) << "a poll would take a core the GPU computes on";
      EXPECT_GT(s.blocking_no_free_core, 0u);
      EXPECT_EQ((*h)->execution_report().flag_devices, "") << "no flag where nobody polls";
    }
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
}

TEST(Strategies, TraceHasATrackPerDeviceAndTheSyncThread) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto h = HeteroForward::create(model, small_options(Strategy::kWeightCentric));
  ASSERT_TRUE(h.ok());
  std::vector<float> logits(static_cast<size_t>(model->config().n_vocab));
  ASSERT_TRUE((*h)->eval(std::vector<TokenId>(8, 3), 0, logits.data()).ok());
  const std::string path = ::testing::TempDir() + "hetero-trace.json";
  ASSERT_TRUE((*h)->write_trace(path).ok());
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  std::set<std::string> tracks;
  size_t npu_kernels = 0, gpu_kernels = 0, gpu_timed = 0;
  std::map<int, std::string> tid_name;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") tid_name[e["tid"].get<int>()] = e["args"]["name"];
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string track = tid_name[e["tid"].get<int>()];
    tracks.insert(track);
    npu_kernels += track == "npu";
    gpu_kernels += track == "opencl";
    // Each GPU kernel carries the device's own time (OpenCL event profiling) beside the span the
    // host saw, which also holds the notice of its completion.
    gpu_timed += track == "opencl" && e["args"].contains("device_us") && e["args"]["device_us"].get<double>() > 0;
  }
  EXPECT_EQ(gpu_timed, gpu_kernels);
  EXPECT_TRUE(tracks.count("sync"));
  EXPECT_GT(npu_kernels, 0u) << "weight-centric puts part of every layer matmul on the NPU";
  EXPECT_GT(gpu_kernels, npu_kernels) << "the GPU runs its matmul parts and every other op";
  // The GPU's consecutive kernels are queued ahead of their dependencies: the report counts them
  // and the trace has the GPU queue's depth as a counter.
  const ExecutionReport r = (*h)->execution_report();
  EXPECT_GT(r.queued_ahead, 0u);
  EXPECT_GT(r.devices.at("opencl").queued_ahead, 0u);
  size_t gpu_queue_samples = 0;
  for (const auto& e : j["traceEvents"]) gpu_queue_samples += e["ph"] == "C" && e["name"] == "opencl queue";
  EXPECT_GT(gpu_queue_samples, 0u);
}

TEST(Strategies, InjectedNpuFailureFallsBackAndKeepsTheOutput) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const std::vector<TokenId> want = greedy(**cpu_only, prompt, 6, n_vocab);
  setenv("TANDEM_NPU_FAULT", "prepare", 1);
  auto h = HeteroForward::create(model, small_options(Strategy::kHybrid));
  unsetenv("TANDEM_NPU_FAULT");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(greedy(**h, prompt, 6, n_vocab), want);
  EXPECT_GT((*h)->fallbacks(), 0);
  EXPECT_EQ((*h)->stats().busy_seconds.count("npu"), 0u) << "nothing ran on the failed NPU";
}

// The compiler's placement (npu_row_ops, on with a compile cache): a norm, activation or residual
// add runs on the NPU when the matmul that next reads the pool runs whole there, in pieces padded
// in place like the matmuls; the tokens stay the cpu's. HeteroInfer's placement (the default)
// keeps them on the GPU, and so does a split consumer.
TEST(Strategies, RowOpsFollowTheMatmulsTheNpuRunsWhole) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab, layers = model->config().n_layers;
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // pieces of 8 and 3 padded to 4
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const std::vector<TokenId> want = greedy(**cpu_only, prompt, 6, n_vocab);
  // Per layer: attention norm, residual add, FFN norm, SwiGLU, residual add; the last add has no
  // matmul after it (the vocabulary projection runs on the GPU).
  const uint64_t per_chunk = uint64_t(5 * layers - 1);
  struct Case {
    Strategy strategy;
    bool row_ops;
    uint64_t after_prefill, after_decode;  // row ops on the NPU after the prompt, then after 6 decode steps
  };
  for (const Case& c : {Case{Strategy::kNpuOnly, true, per_chunk, 7 * per_chunk}, Case{Strategy::kLayer, true, per_chunk, per_chunk},
                        Case{Strategy::kNpuOnly, false, 0, 0}, Case{Strategy::kHybrid, true, 0, 0}}) {
    HeteroOptions o = small_options(c.strategy);
    o.partition.npu_row_ops = c.row_ops;
    auto h = HeteroForward::create(model, o);
    ASSERT_TRUE(h.ok()) << h.status().message();
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    ASSERT_TRUE((*h)->eval(prompt, 0, logits.data()).ok());
    const std::string what = std::string(strategy_name(c.strategy)) + (c.row_ops ? " with" : " without") + " npu_row_ops";
    EXPECT_EQ((*h)->execution_report().npu_row_ops, c.after_prefill) << what;
    auto again = HeteroForward::create(model, o);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(greedy(**again, prompt, 6, n_vocab), want) << what;
    EXPECT_EQ((*again)->execution_report().npu_row_ops, c.after_decode) << what << " (decode runs 6 more chunks)";
  }
}

// An NPU kernel that fails after it ran (and scribbled on its output) runs again on the GPU:
// the tokens do not change, so the KV cache the later steps read stayed consistent.
class RunFaults : public ::testing::TestWithParam<std::tuple<Strategy, std::string>> {};

TEST_P(RunFaults, FailedNpuRunsRerunOnTheGpuAndKeepTheOutput) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  const auto& [strategy, plan] = GetParam();
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  const std::vector<TokenId> want = greedy(**cpu_only, prompt, 6, n_vocab);
  HeteroOptions o = small_options(strategy);
  o.npu_fault = plan;
  auto h = HeteroForward::create(model, o);
  ASSERT_TRUE(h.ok()) << h.status().message();
  ::testing::internal::CaptureStderr();
  const std::vector<TokenId> got = greedy(**h, prompt, 6, n_vocab);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(got, want) << strategy_name(strategy) << " with faults " << plan;
  EXPECT_GT((*h)->run_fallbacks(), 0u);
  EXPECT_EQ((*h)->fallbacks(), 0) << "every graph was prepared; only runs failed";
  EXPECT_NE(warnings.find("warning: npu failed"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("warning", warnings.find("warning") + 1), std::string::npos) << "warned once: " << warnings;
  EXPECT_GT((*h)->stats().busy_seconds.count("npu"), 0u) << "the NPU ran (and failed) its parts";
}

INSTANTIATE_TEST_SUITE_P(All, RunFaults,
                         ::testing::Combine(::testing::Values(Strategy::kHybrid, Strategy::kNpuOnly, Strategy::kWeightCentric,
                                                              Strategy::kMultiTensor),
                                            ::testing::Values(std::string("run"), std::string("run:3"))),
                         [](const auto& info) {
                           std::string n = std::string(strategy_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param);
                           for (char& ch : n)
                             if (ch == '-' || ch == ':') ch = '_';
                           return n;
                         });

// A solver plan overrides --strategy per matmul: here it sends prefill to the NPU alone and decode
// to the GPU alone, whatever the options say.
TEST(Strategies, APlanDecidesEachMatmulAndKeepsTheOutput) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  const std::vector<TokenId> prompt{3, 1, 4, 1, 5, 9, 2, 6};
  HeteroOptions o = small_options(Strategy::kHybrid);
  int asked = 0;
  o.partition.decider = [&](int64_t out, int64_t in, int64_t n) -> std::optional<OpChoice> {
    ++asked;
    EXPECT_GT(out, 0);
    EXPECT_GT(in, 0);
    return OpChoice{n > 1 ? Strategy::kNpuOnly : Strategy::kGpuOnly, n > 1 ? 0.0 : 1.0};
  };
  auto h = HeteroForward::create(model, o);
  ASSERT_TRUE(h.ok());
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  ASSERT_TRUE((*h)->eval(prompt, 0, logits.data()).ok());
  EXPECT_EQ((*h)->last_graph().dump().find(" opencl rows 0:8 w"), std::string::npos) << "no prefill matmul on the GPU";
  const TokenId next = argmax(logits);
  ASSERT_TRUE((*h)->eval(std::span(&next, 1), int(prompt.size()), logits.data()).ok());
  EXPECT_EQ((*h)->last_graph().dump().find(" npu "), std::string::npos) << "no decode matmul on the NPU";
  EXPECT_EQ(asked, 2 * 7 * 2) << "7 splittable matmuls per layer, 2 layers, 2 chunks";

  auto again = HeteroForward::create(model, o);
  ASSERT_TRUE(again.ok());
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  EXPECT_EQ(greedy(**again, prompt, 5, n_vocab), greedy(**cpu_only, prompt, 5, n_vocab));
}

// Multi-tensor takes the solver's chunk length and count: 2 x 4 rows on the NPU and the other 5
// on the GPU for a 13-row prompt (without them: one 8-row chunk, the largest standard length).
TEST(Strategies, MultiTensorRunsTheChunksThePlanChose) {
  if (!opencl_available()) TANDEM_OPENCL_MISSING("no OpenCL device");
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  const int n_vocab = model->config().n_vocab;
  const std::vector<TokenId> prompt{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9};
  HeteroOptions o = small_options(Strategy::kGpuOnly);
  o.partition.decider = [](int64_t, int64_t, int64_t n) -> std::optional<OpChoice> {
    if (n == 1) return std::nullopt;
    return OpChoice{Strategy::kMultiTensor, 5.0 / 13.0, /*npu_chunk=*/4, /*npu_chunks=*/2};
  };
  auto h = HeteroForward::create(model, o);
  ASSERT_TRUE(h.ok()) << h.status().message();
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  ASSERT_TRUE((*h)->eval(prompt, 0, logits.data()).ok());
  const std::string dump = (*h)->last_graph().dump();
  EXPECT_NE(dump.find("'blk.0.attn_q.weight' rows [0, 64) x 13 npu rows 0:4 "), std::string::npos) << dump;
  EXPECT_NE(dump.find("'blk.0.attn_q.weight' rows [0, 64) x 13 npu rows 4:8 "), std::string::npos) << dump;
  EXPECT_NE(dump.find("'blk.0.attn_q.weight' rows [0, 64) x 13 opencl rows 8:13 "), std::string::npos) << dump;
  EXPECT_EQ(dump.find("npu rows 0:8"), std::string::npos) << "the plan's chunks, not the default one\n" << dump;

  auto again = HeteroForward::create(model, o);
  ASSERT_TRUE(again.ok());
  auto cpu_only = make_cpu_forward(model, {2, 64, 16});
  ASSERT_TRUE(cpu_only.ok());
  EXPECT_EQ(greedy(**again, prompt, 5, n_vocab), greedy(**cpu_only, prompt, 5, n_vocab));
}

TEST(Strategies, BadFaultPlanIsRefusedWithItsSource) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q4_0));
  ASSERT_TRUE(model);
  HeteroOptions o = small_options(Strategy::kHybrid);
  o.npu_fault = "run:0";
  auto h = HeteroForward::create(model, o);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("--npu-fault: 'run:0'"), std::string::npos) << h.status().message();
}

}  // namespace
}  // namespace tandem
