// The device registry: one table, each row's kind true of the device it opens, every capability a
// device offers consistent with its caps.
#include <gtest/gtest.h>

#include <set>

#include "devices/registry.h"
#include "tests/model/test_models.h"

namespace tandem::devices {
namespace {

TEST(Registry, EachRowsKindIsTheOpenedDevicesKind) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  std::set<std::string> names;
  for (const DeviceEntry& e : device_table()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name << " is listed twice";
    EXPECT_FALSE(e.about.empty()) << e.name;
    ASSERT_EQ(device_kind_of(e.name), e.kind);
    auto d = open_device(e.name, model, 1);
    if (!d.ok()) continue;  // not on this machine (opencl without a driver)
    EXPECT_EQ((*d)->name(), e.name);
    EXPECT_EQ((*d)->caps().kind, e.kind) << e.name;
    // A device that runs only prepared shapes can prepare them; one that runs compiled programs
    // prepares graphs to run them in.
    EXPECT_EQ((*d)->static_graphs() != nullptr, !(*d)->caps().dynamic_shapes) << e.name;
    if ((*d)->compiled_programs()) {
      EXPECT_NE((*d)->static_graphs(), nullptr) << e.name;
    }
  }
  EXPECT_EQ(device_kind_of("gpu"), std::nullopt) << "a kind is not a device name";
}

TEST(Registry, AnUnknownNameListsTheTable) {
  auto d = open_device("tpu", nullptr, 1);
  ASSERT_FALSE(d.ok());
  for (const DeviceEntry& e : device_table())
    EXPECT_NE(d.status().message().find(e.name), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("device 'tpu' is unknown"), std::string::npos);
}

// A dynamic-shape device prepares nothing: prepare_graph answers for it.
TEST(Registry, PrepareGraphIsANoOpWithoutStaticGraphs) {
  auto model = testing::load_or_die(testing::small_model_path(Arch::kLlama, DType::Q8_0));
  ASSERT_TRUE(model);
  auto cpu = open_device("cpu", model, 1);
  ASSERT_TRUE(cpu.ok());
  const Weight* w = &model->layers()[0].wq;
  std::vector<float> x(size_t(w->cols)), y(size_t(w->rows));
  auto r = prepare_graph(**cpu, GraphSpec::of(OpCall::matmul(w, 0, w->rows, x.data(), 1, w->cols, y.data(), w->rows)));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cached);
  EXPECT_EQ(r->prepare_seconds, 0.0);
  EXPECT_EQ(bytes_copied(**cpu), 0u);
  EXPECT_EQ(bytes_converted(**cpu), 0u);
}

}  // namespace
}  // namespace tandem::devices
