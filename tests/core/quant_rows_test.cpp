// Every block type against ggml's own routines: quantize_row over golden_inputs_k() must give the
// bytes llama-quantize's call gives (tests/core/golden/<type>.bin, from
// tools/dev/make_quant_golden.cpp), and dequantize_row of those bytes exactly ggml's floats (their
// SHA-256 in golden/dequant.sha256).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compile_cache/sha256.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "tests/core/golden_inputs.h"

namespace tandem {
namespace {

std::string golden_path(const std::string& name) { return std::string(TANDEM_SOURCE_DIR) + "/tests/core/golden/" + name; }

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::map<std::string, std::string> dequant_hashes() {
  std::map<std::string, std::string> h;
  std::ifstream f(golden_path("dequant.sha256"));
  std::string name, hex;
  while (f >> name >> hex) h[name] = hex;
  return h;
}

class BlockTypes : public ::testing::TestWithParam<DType> {};

TEST_P(BlockTypes, QuantizeMatchesGgmlBitForBit) {
  const DType t = GetParam();
  const std::string name(dtype_name(t));
  const std::vector<float> x = golden::golden_inputs_k();
  const std::vector<unsigned char> want = read_bytes(golden_path(name + ".bin"));
  ASSERT_EQ(want.size(), row_bytes(t, x.size())) << name << ".bin";
  std::vector<unsigned char> got(want.size(), 0xAB);
  quantize_row(t, x.data(), got.data(), x.size());
  const size_t block_bytes = dtype_traits(t).block_bytes;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(int(got[i]), int(want[i])) << name << ": first difference at byte " << i << " (block " << i / block_bytes
                                         << ", byte " << i % block_bytes << " in it; inputs "
                                         << i / block_bytes * dtype_traits(t).block_size << "..)";
}

TEST_P(BlockTypes, DequantizeMatchesGgmlExactly) {
  const DType t = GetParam();
  const std::string name(dtype_name(t));
  const std::vector<unsigned char> q = read_bytes(golden_path(name + ".bin"));
  const size_t n = size_t(golden::kGoldenKCount);
  ASSERT_EQ(q.size(), row_bytes(t, n));
  std::vector<float> y(n);
  dequantize_row(t, q.data(), y.data(), n);
  const auto hashes = dequant_hashes();
  ASSERT_TRUE(hashes.count(name)) << "no hash for " << name << " in dequant.sha256";
  EXPECT_EQ(compile_cache::sha256_hex(y.data(), n * sizeof(float)), hashes.at(name))
      << name << ": dequantized floats differ from ggml's dequantize_row";
}

INSTANTIATE_TEST_SUITE_P(AllGgufBlockTypes, BlockTypes,
                         ::testing::Values(DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                                           DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace tandem
