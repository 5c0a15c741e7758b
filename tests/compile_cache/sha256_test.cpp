#include <gtest/gtest.h>

#include <fstream>

#include "compile_cache/sha256.h"
#include "tests/model/test_models.h"

namespace tandem::compile_cache {
namespace {

TEST(Sha256, KnownVectors) {  // FIPS 180-2 examples
  EXPECT_EQ(sha256_hex(std::string("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, FileEqualsBytesAcrossChunks) {
  const std::string path = testing::process_temp_dir() + "/blob";
  std::string data(3 * (1 << 20) + 17, '\0');  // spans several read chunks
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 131 + 7);
  std::ofstream(path, std::ios::binary).write(data.data(), std::streamsize(data.size()));
  auto h = sha256_file(path);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, sha256_hex(data));
  auto missing = sha256_file(path + ".nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("blob.nope"), std::string::npos);
}

}  // namespace
}  // namespace tandem::compile_cache
