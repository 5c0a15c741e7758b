// release_resident(): the pages of a weight the cpu keeps its own copy of go back to the file,
// the bytes seen through the same pointers stay the same, and nothing is released where it
// would not be safe (a pointer in no open file, a file changed on disk).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "model/gguf/gguf.h"
#include "tests/gguf/gguf_temp_file.h"

namespace tandem::gguf {
namespace {

using testing::TempFile;

constexpr size_t kFloats = size_t(3) << 20;  // 12 MiB: whole huge pages inside it wherever it lands

uint32_t pattern(size_t i) { return uint32_t(i * 2654435761u) ^ 0x5bd1e995u; }

void write_big_file(const std::string& path) {
  GgufWriter w;
  w.add_tensor("big", {kFloats}, DType::F32, [](uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n / 4; ++i) {
      const uint32_t v = pattern(i);
      std::memcpy(dst + 4 * i, &v, 4);
    }
  });
  ASSERT_TRUE(w.write(path).ok());
}

bool holds_pattern(const uint8_t* p) {
  for (size_t i = 0; i < kFloats; ++i) {
    uint32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    if (v != pattern(i)) return false;
  }
  return true;
}

// The pathname /proc/self/maps gives the mapping that holds address p ("" for anonymous memory).
std::string mapping_of(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || a < lo || a >= hi) continue;
    const size_t slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "(unmapped)";
}

class Residencies : public ::testing::TestWithParam<Residency> {
 protected:
  void SetUp() override { set_default_residency(GetParam()); }
  void TearDown() override { set_default_residency(Residency::kAuto); }
};

TEST_P(Residencies, ReleasedBytesStayTheSameAndComeFromTheFile) {
  TempFile tmp;
  write_big_file(tmp.path());
  auto f = GgufFile::open(tmp.path());
  ASSERT_TRUE(f.ok()) << f.status().message();
  const TensorInfo* t = (*f)->find_tensor("big");
  ASSERT_NE(t, nullptr);
  const uint8_t* mid = t->data + t->n_bytes / 2;
  if (GetParam() == Residency::kHugePages) {
    EXPECT_EQ(mapping_of(mid), "") << "a copy in anonymous memory";
  }

  const size_t released = release_resident(t->data, t->n_bytes);
  // Whole huge pages (or pages) inside the 12 MiB tensor: at least 8 MiB of it.
  EXPECT_GE(released, size_t(8) << 20);
  EXPECT_LE(released, t->n_bytes);
  EXPECT_EQ(mapping_of(mid), tmp.path()) << "the middle of the tensor is the file's pages now";
  EXPECT_TRUE(holds_pattern(t->data)) << "every byte reads the same after the release";
  // Releasing again is harmless.
  release_resident(t->data, t->n_bytes);
  EXPECT_TRUE(holds_pattern(t->data));
}

INSTANTIATE_TEST_SUITE_P(Gguf, Residencies, ::testing::Values(Residency::kHugePages, Residency::kMap),
                         [](const auto& info) { return info.param == Residency::kMap ? "Map" : "HugePages"; });

TEST(GgufResidency, NothingIsReleasedOutsideAnOpenFile) {
  std::vector<uint8_t> mine(size_t(8) << 20, 7);
  EXPECT_EQ(release_resident(mine.data(), mine.size()), 0u);
  EXPECT_EQ(mine[mine.size() / 2], 7);
}

// The default maps a file of mostly block-quantized weights (the cpu repacks them) and copies
// one of float weights into huge pages (decode streams them as stored).
TEST(GgufResidency, TheDefaultMapsQuantizedFilesAndCopiesFloatOnes) {
  set_default_residency(Residency::kAuto);
  TempFile floats(".f32.gguf"), quantized(".q8_0.gguf");
  write_big_file(floats.path());
  GgufWriter w;
  w.add_tensor("norm", {4096}, DType::F32, [](uint8_t* dst, size_t n) { std::memset(dst, 0, n); });
  w.add_tensor("q", {4096, 64}, DType::Q8_0, [](uint8_t* dst, size_t n) { std::memset(dst, 0, n); });
  ASSERT_TRUE(w.write(quantized.path()).ok());
  auto f = GgufFile::open(floats.path());
  auto q = GgufFile::open(quantized.path());
  ASSERT_TRUE(f.ok() && q.ok());
  EXPECT_FALSE((*f)->mapped());
  EXPECT_EQ(mapping_of((*f)->find_tensor("big")->data), "");
  EXPECT_TRUE(holds_pattern((*f)->find_tensor("big")->data)) << "the tensors point into the copy";
  EXPECT_TRUE((*q)->mapped());
  EXPECT_EQ(mapping_of((*q)->find_tensor("q")->data), quantized.path());
}

TEST(GgufResidency, AChangedFileKeepsTheCopy) {
  TempFile tmp;
  write_big_file(tmp.path());
  set_default_residency(Residency::kHugePages);
  auto f = GgufFile::open(tmp.path());
  ASSERT_TRUE(f.ok()) << f.status().message();
  const TensorInfo* t = (*f)->find_tensor("big");
  ASSERT_NE(t, nullptr);
  // Rewritten in place with other bytes (a new mtime): mapping it would change what t->data reads.
  {
    std::fstream out(tmp.path(), std::ios::in | std::ios::out | std::ios::binary);
    out.seekp(std::streamoff((*f)->data_offset() + t->offset + 4 * 1024 * 1024));
    const std::string junk(4096, 'x');
    out.write(junk.data(), std::streamsize(junk.size()));
  }
  struct timeval later[2] = {{2000000000, 0}, {2000000000, 0}};
  ASSERT_EQ(::utimes(tmp.path().c_str(), later), 0);
  EXPECT_EQ(release_resident(t->data, t->n_bytes), 0u);
  EXPECT_EQ(mapping_of(t->data + t->n_bytes / 2), "");
  EXPECT_TRUE(holds_pattern(t->data));
  set_default_residency(Residency::kAuto);
}

TEST(GgufResidency, AClosedFileIsNoLongerLookedUp) {
  TempFile tmp;
  write_big_file(tmp.path());
  set_default_residency(Residency::kMap);
  const uint8_t* data = nullptr;
  size_t n = 0;
  {
    auto f = GgufFile::open(tmp.path());
    ASSERT_TRUE(f.ok());
    data = (*f)->find_tensor("big")->data;
    n = (*f)->find_tensor("big")->n_bytes;
  }
  set_default_residency(Residency::kAuto);
  std::vector<uint8_t> other(n);  // whatever now lives there is not the file's to release
  EXPECT_EQ(release_resident(data, n), 0u);
}

}  // namespace
}  // namespace tandem::gguf
