// One test per class of malformed file: each builds the broken bytes and checks that the error
// names the file, the field and the offending value.
#include <gtest/gtest.h>

#include <limits>

#include "gguf_test_bytes.h"

namespace tandem::gguf {
namespace {

using testing::GgufBytes;

constexpr uint32_t kF32 = 0, kQ4_0 = 2, kIQ2_XXS = 16;

// Parsing must fail with "t.gguf: FIELD: ..." and the message must contain every fragment.
::testing::AssertionResult FailsWith(const GgufBytes& b, std::string_view field,
                                     std::initializer_list<std::string_view> fragments,
                                     StatusCode code = StatusCode::kInvalidArgument) {
  auto r = b.parse();
  if (r.ok()) return ::testing::AssertionFailure() << "parsed, expected an error about " << field;
  const std::string& msg = r.status().message();
  const std::string prefix = "t.gguf: " + std::string(field) + ": ";
  if (msg.rfind(prefix, 0) != 0) {
    return ::testing::AssertionFailure() << "message does not start with '" << prefix << "': " << msg;
  }
  for (std::string_view f : fragments) {
    if (msg.find(f) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks '" << f << "': " << msg;
    }
  }
  if (msg.find('\n') != std::string::npos) return ::testing::AssertionFailure() << "multi-line: " << msg;
  if (r.status().code() != code) {
    return ::testing::AssertionFailure() << "code " << int(r.status().code()) << ": " << msg;
  }
  return ::testing::AssertionSuccess();
}

// A valid file with one kv and one 8-float tensor; the base the tensor tests corrupt.
GgufBytes OneTensorFile(std::initializer_list<uint64_t> dims = {8}, uint32_t type = kF32,
                        uint64_t offset = 0, size_t data_bytes = 32) {
  GgufBytes b;
  b.header(1, 1).kv_str("general.architecture", "llama").tensor_info("w", dims, type, offset);
  b.pad_to(32).zeros(data_bytes);
  return b;
}

TEST(GgufValidation, TheBaseFileIsValid) {
  auto r = OneTensorFile().parse();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->tensors().size(), 1u);
}

TEST(GgufValidation, TooShortForMagic) {
  GgufBytes b;
  b.bytes("GG");
  EXPECT_TRUE(FailsWith(b, "magic", {"too short", "(2 bytes)"}));
}

TEST(GgufValidation, BadMagic) {
  GgufBytes b;
  b.bytes("GGML").u32(3).u64(0).u64(0);
  EXPECT_TRUE(FailsWith(b, "magic", {"not a GGUF file", "(47 47 4d 4c)"}));
}

TEST(GgufValidation, Version1IsRejectedWithAnExplanation) {
  GgufBytes b;
  b.bytes("GGUF").u32(1).u32(0).u32(0);  // v1 used 32-bit counts
  EXPECT_TRUE(FailsWith(b, "version", {"v1", "32-bit counts", "(1)"}, StatusCode::kUnsupported));
}

TEST(GgufValidation, UnsupportedVersion) {
  GgufBytes b;
  b.header(0, 0, 4);
  EXPECT_TRUE(FailsWith(b, "version", {"unsupported", "(4)"}, StatusCode::kUnsupported));
}

TEST(GgufValidation, BigEndianVersionGetsAHint) {
  GgufBytes b;
  b.header(0, 0, 0x03000000);
  EXPECT_TRUE(FailsWith(b, "version", {"(50331648", "big-endian"}, StatusCode::kUnsupported));
}

TEST(GgufValidation, TruncatedHeaderCounts) {
  GgufBytes b;
  b.bytes("GGUF").u32(3).u32(0);  // tensor_count cut in half
  EXPECT_TRUE(FailsWith(b, "tensor_count", {"file ends inside tensor_count", "needs 8 bytes at offset 8", "4 left"}));
  GgufBytes c;
  c.bytes("GGUF").u32(3).u64(0);
  EXPECT_TRUE(FailsWith(c, "metadata_kv_count", {"file ends", "at offset 16"}));
}

TEST(GgufValidation, KvCountLargerThanTheFileCouldHold) {
  GgufBytes b;
  b.header(0, uint64_t(1) << 60).kv_u32("a", 1);
  EXPECT_TRUE(FailsWith(b, "metadata_kv_count", {"more entries than the file could hold", "(1152921504606846976"}));
}

TEST(GgufValidation, TensorCountLargerThanTheFileCouldHold) {
  GgufBytes b;
  b.header(1000, 0).zeros(64);
  EXPECT_TRUE(FailsWith(b, "tensor_count", {"more tensors than the file could hold", "(1000, 64 bytes left)"}));
}

TEST(GgufValidation, KeyLengthPastEnd) {
  GgufBytes b;
  b.header(0, 1).u64(1000).bytes("abc").zeros(10);
  EXPECT_TRUE(FailsWith(b, "metadata #0 key", {"string length exceeds the bytes left", "(1000 > 13)"}));
}

TEST(GgufValidation, TruncatedInsideKeyLength) {
  GgufBytes b;
  b.header(0, 2).kv_str("a", "0123456789").u32(7);  // second key: 4 of its 8 length bytes
  EXPECT_TRUE(FailsWith(b, "metadata #1 key", {"file ends inside string length", "needs 8 bytes", "4 left"}));
}

TEST(GgufValidation, TruncatedValueType) {
  GgufBytes b;
  b.header(0, 1).str("some.key.that.is.long").u16(0);
  EXPECT_TRUE(FailsWith(b, "key 'some.key.that.is.long'", {"file ends inside value type"}));
}

TEST(GgufValidation, UnknownValueType) {
  GgufBytes b;
  b.header(0, 1).str("k").u32(13).u32(0);
  EXPECT_TRUE(FailsWith(b, "key 'k'", {"unknown value type", "(13)"}));
}

TEST(GgufValidation, ControlBytesInKeysAreEscapedToKeepOneLine) {
  GgufBytes b;
  b.header(0, 1).str("evil\nkey").u32(99).u32(0);
  EXPECT_TRUE(FailsWith(b, "key 'evil\\x0akey'", {"unknown value type (99)"}));
}

TEST(GgufValidation, UnknownArrayElementType) {
  GgufBytes b;
  b.header(0, 1).str("k").u32(uint32_t(ValueType::ARRAY)).u32(77).u64(0);
  EXPECT_TRUE(FailsWith(b, "key 'k'", {"unknown array element type", "(77)"}));
}

TEST(GgufValidation, StringValueLengthPastEnd) {
  GgufBytes b;
  b.header(0, 1).str("name").u32(uint32_t(ValueType::STRING)).u64(50).bytes("short");
  EXPECT_TRUE(FailsWith(b, "key 'name'", {"string length exceeds the bytes left", "(50 > 5)"}));
}

TEST(GgufValidation, HugeArrayCountIsRejectedBeforeAllocating) {
  GgufBytes b;
  b.header(0, 1).str("arr").u32(uint32_t(ValueType::ARRAY)).u32(uint32_t(ValueType::UINT32));
  b.u64(uint64_t(1) << 62).u32(1).u32(2);
  EXPECT_TRUE(FailsWith(b, "key 'arr'", {"array count exceeds", "(4611686018427387904 uint32, 8 bytes left)"}));
}

TEST(GgufValidation, HugeStringArrayCountIsRejected) {
  GgufBytes b;
  b.header(0, 1).str("tokenizer.ggml.tokens").u32(uint32_t(ValueType::ARRAY));
  b.u32(uint32_t(ValueType::STRING)).u64(3).str("a").str("b");  // 3 strings promised, 2 present
  EXPECT_TRUE(FailsWith(b, "key 'tokenizer.ggml.tokens'", {"array count exceeds", "(3 string, 18 bytes left)"}));
}

TEST(GgufValidation, StringInsideArrayPastEndNamesTheElement) {
  GgufBytes b;
  b.header(0, 1).str("toks").u32(uint32_t(ValueType::ARRAY)).u32(uint32_t(ValueType::STRING)).u64(2);
  b.str("ok").u64(100).zeros(2);
  EXPECT_TRUE(FailsWith(b, "key 'toks'[1]", {"string length exceeds the bytes left", "(100 > 2)"}));
}

TEST(GgufValidation, TruncatedScalarValue) {
  GgufBytes b;
  b.header(0, 1).str("n").u32(uint32_t(ValueType::UINT64)).u32(7);
  EXPECT_TRUE(FailsWith(b, "key 'n'", {"file ends inside uint64", "needs 8 bytes", "4 left"}));
}

TEST(GgufValidation, BadBoolByte) {
  GgufBytes b;
  b.header(0, 1).str("flag").u32(uint32_t(ValueType::BOOL)).u8(2);
  EXPECT_TRUE(FailsWith(b, "key 'flag'", {"bool byte must be 0 or 1", "(2)"}));
}

TEST(GgufValidation, BadBoolByteInsideNestedArray) {
  GgufBytes b;
  b.header(0, 1).str("m").u32(uint32_t(ValueType::ARRAY)).u32(uint32_t(ValueType::ARRAY)).u64(2);
  b.u32(uint32_t(ValueType::BOOL)).u64(1).u8(1);
  b.u32(uint32_t(ValueType::BOOL)).u64(3).u8(0).u8(1).u8(255);
  EXPECT_TRUE(FailsWith(b, "key 'm'[1][2]", {"bool byte must be 0 or 1", "(255)"}));
}

TEST(GgufValidation, ArraysNestedTooDeep) {
  GgufBytes b;
  b.header(0, 1).str("deep").u32(uint32_t(ValueType::ARRAY));
  for (int level = 0; level < 20; ++level) b.u32(uint32_t(ValueType::ARRAY)).u64(1);
  b.u32(uint32_t(ValueType::UINT8)).u64(0);
  EXPECT_TRUE(FailsWith(b, "key 'deep'[0][0][0][0][0][0][0]", {"arrays nested deeper than 8 levels", "(9)"}));
}

TEST(GgufValidation, NestingAtTheLimitIsAccepted) {
  GgufBytes b;
  b.header(0, 1).str("deep").u32(uint32_t(ValueType::ARRAY));
  for (int level = 0; level < 7; ++level) b.u32(uint32_t(ValueType::ARRAY)).u64(1);
  b.u32(uint32_t(ValueType::UINT8)).u64(1).u8(42);
  auto r = b.parse();
  ASSERT_TRUE(r.ok()) << r.status().message();
}

TEST(GgufValidation, DuplicateKey) {
  GgufBytes b;
  b.header(0, 3).kv_u32("a", 1).kv_u32("b", 2).kv_str("a", "again");
  EXPECT_TRUE(FailsWith(b, "key 'a'", {"duplicate key", "(metadata #0 and #2)"}));
}

TEST(GgufValidation, AlignmentNotAPowerOfTwo) {
  GgufBytes b;
  b.header(0, 1).kv_u32("general.alignment", 24);
  EXPECT_TRUE(FailsWith(b, "general.alignment", {"nonzero power of two", "(24)"}));
}

TEST(GgufValidation, AlignmentZero) {
  GgufBytes b;
  b.header(0, 1).kv_u32("general.alignment", 0);
  EXPECT_TRUE(FailsWith(b, "general.alignment", {"nonzero power of two", "(0)"}));
}

TEST(GgufValidation, AlignmentOfTheWrongType) {
  GgufBytes b;
  b.header(0, 1).str("general.alignment").u32(uint32_t(ValueType::INT32)).u32(64);
  EXPECT_TRUE(FailsWith(b, "general.alignment", {"must be uint32", "(int32 64)"}));
}

TEST(GgufValidation, EmptyTensorName) {
  GgufBytes b;
  b.header(1, 0).tensor_info("", {8}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(FailsWith(b, "tensor #0 name", {"empty"}));
}

TEST(GgufValidation, TensorNameTooLong) {
  GgufBytes b;
  const std::string name(65, 'x');
  b.header(1, 0).tensor_info(name, {8}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(FailsWith(b, "tensor '" + name + "'", {"longer than 64 bytes", "(65)"}));
}

TEST(GgufValidation, TooManyDims) {
  GgufBytes b;
  b.header(1, 0).tensor_info("w", {1, 1, 1, 1, 8}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(FailsWith(b, "tensor 'w'", {"n_dims must be 1..4", "(5)"}));
}

TEST(GgufValidation, ZeroDims) {
  GgufBytes b;
  b.header(1, 0).tensor_info("w", {}, kF32, 0).zeros(64);
  EXPECT_TRUE(FailsWith(b, "tensor 'w'", {"n_dims must be 1..4", "(0)"}));
}

TEST(GgufValidation, ZeroSizedDimension) {
  EXPECT_TRUE(FailsWith(OneTensorFile({8, 0}), "tensor 'w'", {"dims[1] must be >= 1", "(0)"}));
}

TEST(GgufValidation, ElementCountOverflow) {
  const uint64_t big = uint64_t(1) << 32;
  EXPECT_TRUE(FailsWith(OneTensorFile({big, big}), "tensor 'w'",
                        {"element count overflows", "(4294967296 x 4294967296)"}));
}

TEST(GgufValidation, ByteSizeOverflowWithinInt64Elements) {
  // 2^62 f32 elements fit int64 but take 2^64 bytes.
  EXPECT_TRUE(FailsWith(OneTensorFile({uint64_t(1) << 62}), "tensor 'w'", {"byte size overflows", "(4611686018427387904 elements"}));
}

TEST(GgufValidation, UnsupportedTensorTypeNamesTheGgmlType) {
  EXPECT_TRUE(FailsWith(OneTensorFile({256}, kIQ2_XXS), "tensor 'w'", {"unsupported tensor type", "(16 = iq2_xxs)"},
                        StatusCode::kUnsupported));
}

TEST(GgufValidation, UnknownTensorTypeId) {
  EXPECT_TRUE(FailsWith(OneTensorFile({8}, 1234), "tensor 'w'", {"(1234 = unknown to ggml)"},
                        StatusCode::kUnsupported));
}

TEST(GgufValidation, FirstDimNotAMultipleOfTheBlockSize) {
  EXPECT_TRUE(FailsWith(OneTensorFile({33, 2}, kQ4_0), "tensor 'w'",
                        {"dims[0] must be a multiple of the q4_0 block size 32", "(33)"}));
}

TEST(GgufValidation, DataOffsetNotAligned) {
  EXPECT_TRUE(FailsWith(OneTensorFile({8}, kF32, 4, 64), "tensor 'w'",
                        {"multiple of the alignment 32", "(4)"}));
}

TEST(GgufValidation, DataPastEndOfFile) {
  // 8 floats need 32 bytes; only 16 are there.
  GgufBytes b = OneTensorFile({8}, kF32, 0, 16);
  const std::string data_start = std::to_string(b.size() - 16);
  EXPECT_TRUE(FailsWith(b, "tensor 'w'",
                        {std::string("data [offset ") + data_start + ", 32 bytes] extends past end of file",
                         std::string("(") + std::to_string(b.size()) + " bytes)"}));
}

TEST(GgufValidation, DataOffsetPastEndOfFile) {
  GgufBytes b = OneTensorFile({8}, kF32, 1024, 32);
  EXPECT_TRUE(FailsWith(b, "tensor 'w'", {"extends past end of file"}));
}

TEST(GgufValidation, DataOffsetOverflow) {
  const uint64_t near_max = std::numeric_limits<uint64_t>::max() / 32 * 32;
  EXPECT_TRUE(FailsWith(OneTensorFile({8}, kF32, near_max), "tensor 'w'",
                        {std::string("data [offset ") + std::to_string(near_max), "extends past end of file"}));
}

TEST(GgufValidation, PaddingPastEndOfFile) {
  GgufBytes b;
  b.header(1, 0).tensor_info("w", {8}, kF32, 0);  // no padding, no data
  EXPECT_TRUE(FailsWith(b, "data section", {"padding to alignment 32 extends past end of file"}));
}

TEST(GgufValidation, DuplicateTensorName) {
  GgufBytes b;
  b.header(2, 0).tensor_info("w", {8}, kF32, 0).tensor_info("w", {8}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_TRUE(FailsWith(b, "tensor 'w'", {"duplicate tensor name", "(tensor #0 and #1)"}));
}

// Tensors whose data share bytes: each must end before the next (by offset) begins.
TEST(GgufValidation, TwoTensorsAtOneOffset) {
  GgufBytes b;
  b.header(2, 0).tensor_info("a", {8}, kF32, 0).tensor_info("b", {8}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(FailsWith(b, "tensors 'a' and 'b'", {"both start at offset"}));
}

TEST(GgufValidation, ATensorWhoseDataRunsIntoTheNext) {
  // 'a' was f32 [8] (32 bytes); retyped as f32 [16] its 64 bytes run 32 into 'b'.
  GgufBytes b;
  b.header(2, 0).tensor_info("a", {16}, kF32, 0).tensor_info("b", {8}, kF32, 32).pad_to(32);
  const std::string a_start = std::to_string(b.size());
  b.zeros(64);
  EXPECT_TRUE(FailsWith(b, "tensor 'a'",
                        {"data [offset " + a_start + ", 64 bytes: f32 [16]] runs 32 bytes into tensor 'b' (at offset " +
                         std::to_string(std::stoull(a_start) + 32) + ")"}));
}

TEST(GgufValidation, OverlapsAreFoundWhateverTheOrderOfTheInfos) {
  // Listed last but stored first: 'late' (q4_0, 64 elements = 36 bytes) runs into 'early' at 32.
  GgufBytes b;
  b.header(3, 0)
      .tensor_info("early", {8}, kF32, 32)
      .tensor_info("end", {8}, kF32, 64)
      .tensor_info("late", {64}, kQ4_0, 0)
      .pad_to(32)
      .zeros(96);
  EXPECT_TRUE(FailsWith(b, "tensor 'late'", {"runs 4 bytes into tensor 'early'"}));
}

TEST(GgufValidation, ATensorInsideAnother) {
  GgufBytes b;
  b.header(3, 0)
      .tensor_info("big", {32}, kF32, 0)
      .tensor_info("inside", {8}, kF32, 32)
      .tensor_info("after", {8}, kF32, 128)
      .pad_to(32)
      .zeros(160);
  EXPECT_TRUE(FailsWith(b, "tensor 'big'", {"runs 96 bytes into tensor 'inside'"}));
}

TEST(GgufValidation, TensorsOutOfOrderOrWithGapsButApartAreRead) {
  // ggml insists on its writer's packing; tandem only on each tensor's bytes being its own.
  GgufBytes b;
  b.header(3, 0)
      .tensor_info("c", {8}, kF32, 128)
      .tensor_info("a", {8}, kF32, 0)
      .tensor_info("b", {32}, kQ4_0, 32)  // 18 bytes, then padding to 64
      .pad_to(32)
      .zeros(160);
  auto r = b.parse();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->tensors().size(), 3u);
}

TEST(GgufValidation, TruncatedTensorInfoFields) {
  // Cut the tensor info after each of its fields: n_dims, a dim, the type, the offset.
  struct Cut {
    size_t keep;  // bytes of the tensor info kept
    std::string_view what;
  };
  GgufBytes info;
  info.tensor_info("w", {8, 2}, kF32, 0);
  for (Cut cut : {Cut{9, "n_dims"}, Cut{13, "dims[0]"}, Cut{21, "dims[1]"}, Cut{29, "type"}, Cut{33, "offset"}}) {
    GgufBytes b;
    // The kv only makes the file long enough to pass the tensor_count plausibility check.
    b.header(1, 1).kv_str("filler", std::string(32, 'f'));
    b.bytes(std::string_view(reinterpret_cast<const char*>(info.data().data()), cut.keep));
    EXPECT_TRUE(FailsWith(b, "tensor 'w'", {std::string("file ends inside ").append(cut.what)})) << cut.what;
  }
}

TEST(GgufValidation, EveryTruncationOfAValidFileFailsCleanly) {
  GgufBytes full;
  full.header(2, 3).kv_str("general.architecture", "llama").kv_u32("n", 5);
  full.str("list").u32(uint32_t(ValueType::ARRAY)).u32(uint32_t(ValueType::STRING)).u64(2).str("x").str("yz");
  full.tensor_info("a", {32}, kQ4_0, 0).tensor_info("b", {4}, kF32, 32).pad_to(32).zeros(18).pad_to(32).zeros(16);
  ASSERT_TRUE(full.parse().ok()) << full.parse().status().message();
  for (size_t n = 0; n < full.size(); ++n) {
    auto r = GgufFile::from_memory(full.data().data(), n, "t.gguf");
    ASSERT_FALSE(r.ok()) << "a " << n << "-byte prefix parsed";
    EXPECT_EQ(r.status().message().rfind("t.gguf: ", 0), 0u) << r.status().message();
  }
}

TEST(GgufValidation, EmptyBufferAndNullPointer) {
  EXPECT_FALSE(GgufFile::from_memory(nullptr, 0, "t.gguf").ok());
  EXPECT_FALSE(GgufFile::from_memory(nullptr, 100, "t.gguf").ok());
}

TEST(GgufValidation, OpenMissingFileNamesPathAndReason) {
  auto r = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
  EXPECT_NE(r.status().message().find("No such file or directory"), std::string::npos) << r.status().message();
}

TEST(GgufValidation, OpenDirectoryFails) {
  auto r = GgufFile::open("/tmp");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tandem::gguf
