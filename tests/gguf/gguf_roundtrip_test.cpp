// Writer -> reader round trips, and the exact bytes the writer produces.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "core/half.h"
#include <cstring>

#include "gguf_temp_file.h"
#include "gguf_test_bytes.h"

namespace tandem::gguf {
namespace {

using testing::GgufBytes;
using testing::TempFile;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Value Arr(ValueType type, std::vector<Value> items) { return Value{Array{type, std::move(items)}}; }

// Every scalar type at its extremes, strings, and arrays (flat and nested) of every type.
std::vector<std::pair<std::string, Value>> AllValueKinds() {
  std::vector<std::pair<std::string, Value>> kv = {
      {"u8", Value{uint8_t(255)}},
      {"i8", Value{int8_t(-128)}},
      {"u16", Value{uint16_t(65535)}},
      {"i16", Value{int16_t(-32768)}},
      {"u32", Value{uint32_t(4294967295u)}},
      {"i32", Value{int32_t(std::numeric_limits<int32_t>::min())}},
      {"f32", Value{float(-1.5e-7f)}},
      {"bool.true", Value{true}},
      {"bool.false", Value{false}},
      {"str", Value{std::string("h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C")}},
      {"str.empty", Value{std::string()}},
      {"str.nul", Value{std::string("a\0b", 3)}},
      {"u64", Value{uint64_t(std::numeric_limits<uint64_t>::max())}},
      {"i64", Value{int64_t(std::numeric_limits<int64_t>::min())}},
      {"f64", Value{double(3.141592653589793)}},
      {"arr.u8", Arr(ValueType::UINT8, {Value{uint8_t(0)}, Value{uint8_t(200)}})},
      {"arr.i8", Arr(ValueType::INT8, {Value{int8_t(-1)}})},
      {"arr.u16", Arr(ValueType::UINT16, {Value{uint16_t(1)}, Value{uint16_t(65000)}})},
      {"arr.i16", Arr(ValueType::INT16, {Value{int16_t(-300)}})},
      {"arr.u32", Arr(ValueType::UINT32, {Value{uint32_t(7)}})},
      {"arr.i32", Arr(ValueType::INT32, {Value{int32_t(-7)}, Value{int32_t(1 << 30)}})},
      {"arr.f32", Arr(ValueType::FLOAT32, {Value{0.25f}, Value{-0.0f}})},
      {"arr.bool", Arr(ValueType::BOOL, {Value{true}, Value{false}, Value{true}})},
      {"arr.str", Arr(ValueType::STRING, {Value{std::string("a")}, Value{std::string()}, Value{std::string("ccc")}})},
      {"arr.u64", Arr(ValueType::UINT64, {Value{uint64_t(1) << 63}})},
      {"arr.i64", Arr(ValueType::INT64, {Value{int64_t(-1)}})},
      {"arr.f64", Arr(ValueType::FLOAT64, {Value{1e300}})},
      {"arr.empty", Arr(ValueType::FLOAT32, {})},
      {"arr.nested",
       Arr(ValueType::ARRAY,
           {Arr(ValueType::STRING, {Value{std::string("x")}, Value{std::string("yy")}}),
            Arr(ValueType::INT32, {}),
            Arr(ValueType::ARRAY, {Arr(ValueType::BOOL, {Value{true}})})})},
  };
  return kv;
}

// Deterministic bytes that differ per tensor, so a mix-up of offsets shows.
void FillPattern(uint8_t* dst, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) dst[i] = uint8_t(seed * 31 + i * 7 + (i >> 8));
}

TEST(GgufRoundTrip, EveryValueTypeSurvives) {
  GgufWriter w;
  const auto kv = AllValueKinds();
  for (const auto& [k, v] : kv) w.set(k, v);
  TempFile tmp;
  ASSERT_TRUE(w.write(tmp.path()).ok());

  auto r = GgufFile::open(tmp.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(f.metadata().size(), kv.size());
  for (size_t i = 0; i < kv.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].first, kv[i].first) << "insertion order";
    // Value == compares the type and the value, recursing into arrays.
    const Value& got = f.metadata()[i].second;
    EXPECT_EQ(got.type(), kv[i].second.type()) << kv[i].first;
    EXPECT_TRUE(got == kv[i].second) << kv[i].first;
  }
  // Spot checks through the getters.
  EXPECT_EQ(*f.get_string("str.nul"), std::string("a\0b", 3));
  EXPECT_EQ(*f.get_int("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_FLOAT_EQ(float(*f.get_float("f32")), -1.5e-7f);
  const Array* nested = *f.get_array("arr.nested");
  ASSERT_EQ(nested->items.size(), 3u);
  EXPECT_EQ(*nested->items[0].as_array()->items[1].as_string(), "yy");
  EXPECT_TRUE(*nested->items[2].as_array()->items[0].as_array()->items[0].as_bool());
}

// Values compare equal through std::variant; this must hold for the round trip test to mean anything.
TEST(GgufRoundTrip, ValueComparisonDetectsDifferences) {
  EXPECT_FALSE(Value{uint32_t(1)} == Value{int32_t(1)});
  EXPECT_FALSE(Arr(ValueType::STRING, {Value{std::string("a")}}) ==
               Arr(ValueType::STRING, {Value{std::string("b")}}));
}

struct TensorCase {
  std::string name;
  std::vector<uint64_t> dims;
  DType type;
  uint64_t n_bytes;
};

TEST(GgufRoundTrip, EveryTensorTypeSurvivesWithAlignedOffsets) {
  const std::vector<TensorCase> cases = {
      {"f32", {3, 2}, DType::F32, 24},
      {"f16", {5}, DType::F16, 10},
      {"q4_0", {64, 3}, DType::Q4_0, 2 * 3 * 18},
      {"q8_0", {32, 1, 2}, DType::Q8_0, 2 * 34},
      {"bf16", {7, 1, 1, 2}, DType::BF16, 28},
  };
  GgufWriter w;
  w.set("general.architecture", Value{std::string("test")});
  std::vector<std::string> produced;
  for (size_t i = 0; i < cases.size(); ++i) {
    w.add_tensor(cases[i].name, cases[i].dims, cases[i].type,
                 [&, i](uint8_t* dst, size_t n) {
                   EXPECT_EQ(n, cases[i].n_bytes) << cases[i].name;
                   produced.push_back(cases[i].name);
                   FillPattern(dst, n, uint8_t(i));
                 });
  }
  TempFile tmp;
  Status s = w.write(tmp.path());
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(produced.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(produced[i], cases[i].name) << "producer order";

  auto r = GgufFile::open(tmp.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GgufFile& f = **r;
  ASSERT_EQ(f.tensors().size(), cases.size());
  EXPECT_EQ(f.data_offset() % 32, 0u);
  const std::vector<uint8_t> file = ReadAll(tmp.path());
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, cases[i].name);
    EXPECT_EQ(t.dims, cases[i].dims);
    EXPECT_EQ(t.type, cases[i].type);
    EXPECT_EQ(t.n_bytes, cases[i].n_bytes);
    EXPECT_EQ(t.offset, expected_offset) << "tensors are packed in order, each padded to 32";
    expected_offset += (t.n_bytes + 31) / 32 * 32;
    std::vector<uint8_t> want(t.n_bytes);
    FillPattern(want.data(), want.size(), uint8_t(i));
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.n_bytes), want) << t.name;
    // Padding after each tensor is zero.
    const size_t end = size_t(f.data_offset() + t.offset + t.n_bytes);
    for (size_t p = end; p < (end + 31) / 32 * 32; ++p) ASSERT_EQ(file[p], 0) << "padding byte " << p;
    EXPECT_EQ(f.find_tensor(cases[i].name), &t);
  }
  EXPECT_EQ(f.file_size(), f.data_offset() + expected_offset) << "last tensor padded too";
  EXPECT_EQ(f.find_tensor("absent"), nullptr);
}

TEST(GgufRoundTrip, HalfPrecisionValuesSurvive) {
  const std::vector<float> values = {0.0f, 1.0f, -2.5f, 65504.0f, 6.1e-5f};
  GgufWriter w;
  w.add_tensor("h", {values.size()}, DType::F16, [&](uint8_t* dst, size_t n) {
    for (size_t i = 0; i < values.size(); ++i) {
      const fp16_t h = f32_to_fp16(values[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
  });
  TempFile tmp;
  ASSERT_TRUE(w.write(tmp.path()).ok());
  auto r = GgufFile::open(tmp.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TensorInfo* t = (*r)->find_tensor("h");
  ASSERT_NE(t, nullptr);
  for (size_t i = 0; i < values.size(); ++i) {
    fp16_t h;
    std::memcpy(&h, t->data + 2 * i, 2);
    EXPECT_NEAR(fp16_to_f32(h), values[i], std::fabs(values[i]) * 1e-3f);
  }
}

TEST(GgufRoundTrip, CustomAlignmentIsWrittenAndHonoured) {
  GgufWriter w;
  w.set("a", Value{uint32_t(1)});
  w.set_alignment(64);
  w.add_tensor("x", {3}, DType::F32, [](uint8_t* d, size_t n) { FillPattern(d, n, 1); });
  w.add_tensor("y", {5}, DType::F32, [](uint8_t* d, size_t n) { FillPattern(d, n, 2); });
  TempFile tmp;
  ASSERT_TRUE(w.write(tmp.path()).ok());
  auto r = GgufFile::open(tmp.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ(*(*r)->get_int("general.alignment"), 64);
  EXPECT_EQ((*r)->data_offset() % 64, 0u);
  EXPECT_EQ((*r)->tensors()[1].offset, 64u);
  EXPECT_EQ((*r)->file_size(), (*r)->data_offset() + 128);
}

TEST(GgufRoundTrip, DefaultAlignmentIsNotWrittenAsAKey) {
  GgufWriter w;
  w.set_alignment(32);
  TempFile tmp;
  ASSERT_TRUE(w.write(tmp.path()).ok());
  auto r = GgufFile::open(tmp.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->find("general.alignment"), nullptr);
  EXPECT_EQ((*r)->alignment(), 32u);
}

TEST(GgufRoundTrip, SetReplacesAndKeepsPosition) {
  GgufWriter w;
  w.set("first", Value{uint32_t(1)});
  w.set("second", Value{uint32_t(2)});
  w.set("first", Value{std::string("replaced")});
  TempFile tmp;
  ASSERT_TRUE(w.write(tmp.path()).ok());
  auto r = GgufFile::open(tmp.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)->metadata().size(), 2u);
  EXPECT_EQ((*r)->metadata()[0].first, "first");
  EXPECT_EQ(*(*r)->get_string("first"), "replaced");
}

// The writer's exact bytes for a tiny file, assembled independently from the spec.
TEST(GgufRoundTrip, WriterBytesMatchTheSpecLayout) {
  GgufWriter w;
  w.set("general.architecture", Value{std::string("llama")});
  w.set("flag", Value{true});
  w.add_tensor("t0", {2}, DType::F32, [](uint8_t* d, size_t n) { std::memset(d, 0xAB, n); });
  w.add_tensor("t1", {32}, DType::Q8_0, [](uint8_t* d, size_t n) { std::memset(d, 0xCD, n); });
  TempFile tmp;
  ASSERT_TRUE(w.write(tmp.path()).ok());

  GgufBytes want;
  want.header(2, 2).kv_str("general.architecture", "llama");
  want.str("flag").u32(uint32_t(ValueType::BOOL)).u8(1);
  want.tensor_info("t0", {2}, 0, 0).tensor_info("t1", {32}, 8, 32).pad_to(32);
  want.bytes(std::string(8, '\xAB')).pad_to(32).bytes(std::string(34, '\xCD')).pad_to(32);
  EXPECT_EQ(ReadAll(tmp.path()), want.data());
}

::testing::AssertionResult WriteFailsWith(const GgufWriter& w, std::string_view fragment) {
  TempFile tmp;
  Status s = w.write(tmp.path());
  if (s.ok()) return ::testing::AssertionFailure() << "write succeeded";
  if (s.message().find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure() << "message lacks '" << fragment << "': " << s.message();
  }
  if (std::ifstream(tmp.path()).good()) return ::testing::AssertionFailure() << "file left behind";
  // The writer's temporary is PATH.partial-PID-N in the same folder.
  const std::filesystem::path target(tmp.path());
  for (const auto& entry : std::filesystem::directory_iterator(target.parent_path())) {
    if (entry.path().filename().string().rfind(target.filename().string() + ".partial", 0) == 0) {
      return ::testing::AssertionFailure() << "partial file left behind: " << entry.path();
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(GgufWriterErrors, RejectsInvalidTensorsAndValues) {
  auto noop = [](uint8_t*, size_t) {};
  {
    GgufWriter w;
    w.add_tensor("q", {33}, DType::Q4_0, noop);
    EXPECT_TRUE(WriteFailsWith(w, "tensor 'q': dims[0] must be a multiple of the q4_0 block size 32 (33)"));
  }
  {
    GgufWriter w;
    w.add_tensor("a", {4}, DType::F32, noop);
    w.add_tensor("a", {4}, DType::F32, noop);
    EXPECT_TRUE(WriteFailsWith(w, "tensor 'a': duplicate tensor name"));
  }
  {
    GgufWriter w;
    w.add_tensor("z", {4, 0}, DType::F32, noop);
    EXPECT_TRUE(WriteFailsWith(w, "dims[1] must be >= 1"));
  }
  {
    GgufWriter w;
    w.add_tensor("five", {1, 1, 1, 1, 1}, DType::F32, noop);
    EXPECT_TRUE(WriteFailsWith(w, "n_dims must be 1..4 (5)"));
  }
  {
    GgufWriter w;
    w.set("mixed", Arr(ValueType::INT32, {Value{int32_t(1)}, Value{std::string("x")}}));
    EXPECT_TRUE(WriteFailsWith(w, "key 'mixed'[1]: array of int32 holds a string"));
  }
  {
    GgufWriter w;
    w.set_alignment(24);
    EXPECT_TRUE(WriteFailsWith(w, "alignment: must be a power of two that fits uint32 (24)"));
  }
  {
    GgufWriter w;
    w.set("general.alignment", Value{int32_t(64)});
    EXPECT_TRUE(WriteFailsWith(w, "general.alignment: must be uint32"));
  }
}

TEST(GgufWriterErrors, UnwritablePathNamesThePath) {
  GgufWriter w;
  Status s = w.write("/nonexistent/dir/out.gguf");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("/nonexistent/dir/out.gguf"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tandem::gguf
