// Every device runs matmuls through the same contract, and a weight split by rows across two
// devices merges (for free: each writes its own columns) into the cpu's full result.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "devices/cpu/matmul/matmul.h"
#include "devices/registry.h"
#include "tests/model/test_models.h"
#include "tests/support/require_opencl.h"

namespace tandem::devices {
namespace {

// Normalized mean squared error of `got` against `want`.
double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return num / den;
}

struct Fixture {
  std::shared_ptr<Model> model;
  const Weight* w = nullptr;
  int64_t m = 0;
  std::vector<float> x, want;
};

Fixture make(DType type, int64_t m) {
  // The cpu result is the reference here, so it runs its fp32 GEMM (not the bf16 prefill one).
  cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
  Fixture f;
  f.model = testing::load_or_die(testing::small_model_path(Arch::kLlama, type));
  f.w = &f.model->layers()[0].w_gate;  // 128 x 64
  f.m = m;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  f.x.resize(size_t(m * f.w->cols));
  for (float& v : f.x) v = dist(rng);
  f.want.assign(size_t(m * f.w->rows), 0.0f);
  auto cpu = open_device("cpu", f.model, 1);
  EXPECT_TRUE(cpu.ok());
  OpCall all = OpCall::matmul(f.w, 0, f.w->rows, f.x.data(), m, f.w->cols, f.want.data(), f.w->rows);
  EXPECT_TRUE((*cpu)->submit(all).value()->wait().ok());
  return f;
}

std::unique_ptr<Device> open_or_skip(const std::string& name, std::shared_ptr<const Model> model) {
  auto d = open_device(name, std::move(model), 2);
  return d.ok() ? std::move(*d) : nullptr;
}

class DeviceMatmul : public ::testing::TestWithParam<std::tuple<std::string, DType>> {};

TEST_P(DeviceMatmul, RowSplitWithCpuMergesToTheFullResult) {
  const auto [name, type] = GetParam();
  for (int64_t m : {1, 5, 33}) {
    Fixture f = make(type, m);
    std::unique_ptr<Device> dev = open_or_skip(name, f.model);
    if (!dev && name == "opencl") TANDEM_OPENCL_MISSING(name << " is not available here");
    if (!dev) GTEST_SKIP() << name << " is not available here";
    std::unique_ptr<Device> cpu = open_or_skip("cpu", f.model);
    const int64_t split = 96;  // device takes rows [0, 96), cpu the rest
    std::vector<float> y(f.want.size(), NAN);
    OpCall mine = OpCall::matmul(f.w, 0, split, f.x.data(), m, f.w->cols, y.data(), f.w->rows);
    OpCall rest = mine;
    rest.row_begin = split;
    rest.row_end = f.w->rows;
    if (!dev->caps().dynamic_shapes) {
      EXPECT_FALSE(dev->supports(mine)) << "a static-graph device must refuse an unprepared shape";
      EXPECT_FALSE(dev->submit(mine).ok());
      if (!prepare_graph(*dev, GraphSpec::of(mine)).ok()) GTEST_SKIP() << name << " does not run " << dtype_name(type);
      auto again = prepare_graph(*dev, GraphSpec::of(mine));
      ASSERT_TRUE(again.ok());
      EXPECT_TRUE(again->cached);
    }
    ASSERT_TRUE(dev->supports(mine));
    auto a = dev->submit(mine);
    ASSERT_TRUE(a.ok()) << a.status().message();
    auto b = cpu->submit(rest);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE((*a)->wait().ok());
    ASSERT_TRUE((*b)->wait().ok());
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << "a row was not written by either device";
    // A device computing in fp16 converts the fp32 input [m x in] and its output rows [m x split],
    // and says so; fp32 devices convert nothing.
    const uint64_t staged = uint64_t(m * f.w->cols + m * split) * sizeof(float);
    EXPECT_EQ(bytes_converted(*dev), name == "npu" ? staged : 0u) << name << " m=" << m;
    EXPECT_EQ(bytes_converted(*cpu), 0u);
    // fp32 devices agree to rounding; the npu computes in fp16.
    const double limit = dev->caps().kind == DeviceKind::kNpu ? 1e-5 : 1e-10;
    EXPECT_LT(nmse(y, f.want), limit) << name << " m=" << m;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDevicesAndTypes, DeviceMatmul,
                         ::testing::Combine(::testing::Values("cpu", "opencl", "npu"),
                                            ::testing::Values(DType::F32, DType::F16, DType::Q8_0, DType::Q4_0)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::string(dtype_name(std::get<1>(info.param)));
                         });

TEST(DeviceContract, InvalidCallsAreRejectedByName) {
  Fixture f = make(DType::F32, 1);
  auto cpu = open_device("cpu", f.model, 1);
  std::vector<float> y(f.want.size());
  OpCall bad = OpCall::matmul(f.w, 0, f.w->rows + 1, f.x.data(), 1, f.w->cols, y.data(), f.w->rows);
  auto r = (*cpu)->submit(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(f.w->name), std::string::npos) << r.status().message();
  EXPECT_FALSE(open_device("tpu", f.model, 1).ok());
}

TEST(DeviceContract, RegistryListsEveryKnownDevice) {
  const auto list = list_devices(nullptr, 1);
  ASSERT_EQ(list.size(), device_names().size());
  EXPECT_TRUE(list[0].available);  // the cpu is always there
  for (const DeviceListing& d : list) {
    if (d.name == "npu") {
      EXPECT_FALSE(d.caps.dynamic_shapes);
      EXPECT_EQ(d.caps.kind, DeviceKind::kNpu);
    }
    if (!d.available) {
      EXPECT_FALSE(d.unavailable.empty());
    }
  }
}

// A device's identity keys its measurements (the solver's profile cache): it names the device and
// leaves out figures that move between runs (the free memory PoCL reports as global memory).
TEST(DeviceContract, IdentityNamesTheDeviceWithoutFiguresThatMove) {
  Fixture f = make(DType::Q8_0, 1);
  for (const std::string& name : device_names()) {
    std::unique_ptr<Device> a = open_or_skip(name, f.model);
    if (!a) continue;
    std::unique_ptr<Device> b = open_or_skip(name, f.model);
    ASSERT_TRUE(b);
    EXPECT_FALSE(a->identity().empty()) << name;
    EXPECT_EQ(a->identity(), b->identity()) << name;
    EXPECT_EQ(a->identity().find("MiB"), std::string::npos) << name << ": " << a->identity();
  }
}

}  // namespace
}  // namespace tandem::devices
