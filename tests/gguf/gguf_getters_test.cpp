// Typed getters: conversions they allow, and errors naming the key and what was found.
#include <gtest/gtest.h>

#include "gguf_test_bytes.h"

namespace tandem::gguf {
namespace {

using testing::GgufBytes;

class GgufGetters : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_.header(0, 6).kv_str("name", "llama").kv_u32("n", 64);
    bytes_.str("big").u32(uint32_t(ValueType::UINT64)).u64(~uint64_t(0));
    bytes_.str("eps").u32(uint32_t(ValueType::FLOAT32)).raw(1e-5f);
    bytes_.str("flag").u32(uint32_t(ValueType::BOOL)).u8(1);
    bytes_.str("list").u32(uint32_t(ValueType::ARRAY)).u32(uint32_t(ValueType::INT16)).u64(2).u16(3).u16(0xFFFF);
    auto r = bytes_.parse();
    ASSERT_TRUE(r.ok()) << r.status().message();
    file_ = *r;
  }
  GgufBytes bytes_;
  std::shared_ptr<GgufFile> file_;
};

TEST_F(GgufGetters, ReturnValuesOfTheRightType) {
  EXPECT_EQ(*file_->get_string("name"), "llama");
  EXPECT_EQ(*file_->get_int("n"), 64);
  EXPECT_FLOAT_EQ(float(*file_->get_float("eps")), 1e-5f);
  EXPECT_DOUBLE_EQ(*file_->get_float("n"), 64.0) << "integers read as floats";
  EXPECT_TRUE(*file_->get_bool("flag"));
  const Array* list = *file_->get_array("list");
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->type, ValueType::INT16);
  EXPECT_EQ(*list->items[1].as_int(), -1);
}

TEST_F(GgufGetters, MissingKeyIsNotFound) {
  auto r = file_->get_int("llama.block_count");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "t.gguf: key 'llama.block_count': missing");
  EXPECT_EQ(file_->find("llama.block_count"), nullptr);
}

TEST_F(GgufGetters, WrongTypeNamesWhatWasFound) {
  EXPECT_EQ(file_->get_string("n").status().message(), "t.gguf: key 'n': expected string (uint32 64)");
  EXPECT_EQ(file_->get_int("name").status().message(),
            "t.gguf: key 'name': expected an integer (string \"llama\")");
  EXPECT_EQ(file_->get_bool("n").status().message(), "t.gguf: key 'n': expected bool (uint32 64)");
  EXPECT_EQ(file_->get_array("flag").status().message(), "t.gguf: key 'flag': expected array (bool true)");
  EXPECT_EQ(file_->get_float("list").status().message(),
            "t.gguf: key 'list': expected a number (array of 2 int16)");
  EXPECT_FALSE(file_->get_int("flag").ok()) << "bool is not an integer";
}

TEST_F(GgufGetters, Uint64BeyondInt64IsAnErrorNotAWrap) {
  auto r = file_->get_int("big");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("18446744073709551615"), std::string::npos) << r.status().message();
  EXPECT_FALSE(file_->find("big")->as_int().has_value());
}

TEST(GgufValue, TypeNamesAndConversions) {
  EXPECT_EQ(value_type_name(ValueType::FLOAT64), "float64");
  EXPECT_EQ(value_type_name(ValueType::ARRAY), "array");
  EXPECT_EQ(Value{int8_t(-3)}.type(), ValueType::INT8);
  EXPECT_EQ(Value{std::string()}.type(), ValueType::STRING);
  EXPECT_EQ(*Value{uint16_t(7)}.as_int(), 7);
  EXPECT_FALSE(Value{true}.as_int().has_value());
  EXPECT_FALSE(Value{1.0f}.as_int().has_value());
  EXPECT_DOUBLE_EQ(*Value{2.5}.as_float(), 2.5);
  EXPECT_FALSE(Value{uint32_t(1)}.as_float().has_value());
}

}  // namespace
}  // namespace tandem::gguf
