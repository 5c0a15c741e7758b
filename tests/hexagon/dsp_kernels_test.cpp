// The DSP's kernels against the host oracle, bit for bit: the activation quantizer and both
// matmuls, over shapes that reach every tail (one block, odd block counts, 128 blocks in 4
// chunks; one output row, 7, 130; one activation row and three), extreme values, unaligned
// weights and weights that end where the pool's guard begins.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dsp_fixture.h"

namespace tandem::hexagon {
namespace {

using testing::DspTest;
using testing::same_float;

class HexagonDsp : public DspTest {
 protected:
  void expect_quantize_matches(const std::vector<float>& x, uint32_t n, uint32_t in) {
    Result<QuantizedActivations> ref = quantize_activations(x, n, in);
    ASSERT_TRUE(ref.ok());
    const PoolBuffer xb = put(x), qb = put(nullptr, ref->q.size()), db = put(nullptr, ref->d.size() * 2);
    std::memset(dsp().host(qb), 0x5a, qb.bytes);  // the padding must be written too
    ASSERT_TRUE(dsp().quantize(xb, qb, db, n, in).ok());
    const std::vector<int8_t> q = get<int8_t>(qb);
    const std::vector<uint16_t> d = get<uint16_t>(db);
    for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(d[i], ref->d[i]) << "scale " << i << " (in " << in << ")";
    for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(q[i], ref->q[i]) << "value " << i << " (in " << in << ")";
  }

  void expect_matmul_matches(WeightFormat f, const std::vector<uint8_t>& w, const QuantizedActivations& a,
                             uint32_t out, size_t shift = 0) {
    Result<std::vector<float>> ref = matmul(f, w, out, a);
    ASSERT_TRUE(ref.ok());
    Result<std::vector<float>> y = dsp_matmul(f, w, a, out, shift);
    ASSERT_TRUE(y.ok()) << y.status().message();
    for (size_t i = 0; i < ref->size(); ++i)
      ASSERT_TRUE(same_float((*y)[i], (*ref)[i]))
          << format_name(f) << " n " << a.n << " in " << a.in << " out " << out << " shift " << shift << ": y[" << i
          << "] dsp " << (*y)[i] << " (" << std::hex << testing::bits_of((*y)[i]) << ") reference " << std::dec
          << (*ref)[i] << " (" << std::hex << testing::bits_of((*ref)[i]) << ")";
  }
};

TEST_F(HexagonDsp, PingAnswersWithTheProtocolVersion) {
  Result<uint32_t> v = dsp().ping(0xdecafbad);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, THX_VERSION);
  EXPECT_GT(dsp().last_round_trip_ns(), 0);
}

TEST_F(HexagonDsp, QuantizeIsBitExact) {
  for (auto [n, in] : {std::pair{1u, 32u}, {3u, 96u}, {2u, 4096u}}) expect_quantize_matches(testing::random_activations(n, in, in), n, in);
}

TEST_F(HexagonDsp, QuantizeIsBitExactOnExtremeBlocks) {
  const uint32_t in = 32 * 12;
  std::vector<float> x = testing::random_activations(1, in, 5);
  auto block = [&](int b) { return x.data() + 32 * b; };
  for (int j = 0; j < 32; ++j) block(0)[j] = 0.0f;                        // amax 0: d = 0, id = 0
  for (int j = 0; j < 32; ++j) block(1)[j] = float(j - 16) + 0.5f;        // exact halves (d = 1)
  block(1)[0] = -127.0f;
  for (int j = 0; j < 32; ++j) block(2)[j] = (j & 1 ? -3e38f : 2.9e38f);  // huge
  for (int j = 0; j < 32; ++j) block(3)[j] = float(j) * 1e-40f;           // subnormal: 1/d overflows to inf
  block(4)[3] = std::numeric_limits<float>::infinity();                  // d = inf, the rest 0
  block(5)[7] = std::nanf("");                                            // NaN never the maximum; it quantizes to 0
  for (int j = 0; j < 32; ++j) block(6)[j] = (j % 3 ? 65504.0f * 127 : -1.0f);  // fp16 d at its top
  for (int j = 0; j < 32; ++j) block(7)[j] = 1e-6f * float(j - 16);      // fp16 d subnormal
  for (int j = 0; j < 32; ++j) block(8)[j] = -0.0f;
  // d exactly halfway between two fp16 values: 1 + 2^-11 (normal; even is 1) and 3 * 2^-25
  // (subnormal; even is 2 * 2^-24). amax = 127 d is exact, and so is amax / 127.
  block(9)[4] = 127.0f * (1.0f + 0x1p-11f);
  block(10)[30] = -127.0f * 3 * 0x1p-25f;
  block(11)[0] = 127.0f * (1.0f + 3 * 0x1p-11f);  // the other tie direction: up to even
  expect_quantize_matches(x, 1, in);
}

TEST_F(HexagonDsp, MatmulIsBitExactOverShapes) {
  for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    for (uint32_t in : {32u, 96u, 4096u}) {
      for (uint32_t n : {1u, 3u}) {
        Result<QuantizedActivations> a = quantize_activations(testing::random_activations(n, in, in + n), n, in);
        ASSERT_TRUE(a.ok());
        for (uint32_t out : {1u, 7u, 130u}) {
          expect_matmul_matches(f, testing::quantized_weights(f, out, in, out + in), *a, out);
          dsp().reset_pool();
        }
      }
    }
  }
}

// Every bit pattern of values (Q8_0's -128, all 16 nibbles) and scales from 2^-24 to 65504.
TEST_F(HexagonDsp, MatmulIsBitExactOnRawWeights) {
  for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    for (uint32_t in : {64u, 160u, 1056u}) {  // 2, 5 and 33 blocks: a second chunk of one block
      std::vector<float> x = testing::random_activations(2, in, 3 * in);
      for (uint32_t j = 32; j < 64; ++j) x[j] = 0.0f;  // a zero activation block: dx = 0
      Result<QuantizedActivations> a = quantize_activations(x, 2, in);
      ASSERT_TRUE(a.ok());
      std::vector<uint8_t> w = testing::raw_weights(f, 9, in, in);
      const uint8_t zero = f == WeightFormat::kQ8_0 ? 0x00 : 0x88;  // a block of zero values: isum = 0
      for (size_t j = 2; j < block_bytes(f); ++j) w[j] = zero;
      expect_matmul_matches(f, w, *a, 9);
      dsp().reset_pool();
    }
  }
}

TEST_F(HexagonDsp, MatmulIsBitExactOnExtremeValues) {
  const uint32_t in = 4096, out = 3;
  QuantizedActivations a;
  a.n = 2;
  a.in = in;
  a.q.assign(2 * a.stride(), 0);
  a.d.assign(2 * in / 32, 0x7bff);  // 65504
  for (uint32_t j = 0; j < in; ++j) {
    a.q[j] = (j & 1) ? -127 : 127;
    a.q[a.stride() + j] = 127;
  }
  a.d[in / 32] = 0x0001;  // a subnormal scale
  a.d[in / 32 + 1] = 0x7c00;  // inf: inf and NaN results
  for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    std::vector<uint8_t> w(weight_bytes(f, out, in));
    for (size_t at = 0; at < w.size(); at += block_bytes(f)) {
      const size_t row = at / weight_bytes(f, 1, in);
      w[at] = 0xff;  // 65504
      w[at + 1] = 0x7b;
      for (size_t j = 2; j < block_bytes(f); ++j)
        w[at + j] = f == WeightFormat::kQ8_0 ? (row == 0 ? 0x80 : row == 1 ? 0x7f : uint8_t(j * 37))
                                             : (row == 0 ? 0x00 : row == 1 ? 0xff : uint8_t(j * 37));
    }
    expect_matmul_matches(f, w, a, out);
    dsp().reset_pool();
  }
}

// The weights may start at any byte; and where they end at the pool's last byte the kernels'
// windows run into the guard, never past the mapping.
TEST_F(HexagonDsp, MatmulReadsUnalignedWeightsAndWeightsAtThePoolsEnd) {
  for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    const uint32_t in = 96, out = 5;
    Result<QuantizedActivations> a = quantize_activations(testing::random_activations(1, in, 9), 1, in);
    ASSERT_TRUE(a.ok());
    const std::vector<uint8_t> w = testing::raw_weights(f, out, in, 21);
    for (size_t shift : {1u, 2u, 3u, 34u, 127u}) {
      expect_matmul_matches(f, w, *a, out, shift);
      dsp().reset_pool();
    }
    // At the end: y, q and d first, then the weights flush against the guard.
    Result<std::vector<float>> ref = matmul(f, w, out, *a);
    const PoolBuffer qb = put(a->q), db = put(a->d), yb = put(nullptr, out * 4);
    const uint32_t end = uint32_t(dsp().map_bytes() - THX_GUARD_BYTES);
    const PoolBuffer wb{end - uint32_t(w.size()), uint32_t(w.size())};
    std::memcpy(dsp().host(wb), w.data(), w.size());
    ASSERT_TRUE(dsp().matmul(f, wb, qb, db, yb, 1, in, out).ok());
    const std::vector<float> y = get<float>(yb);
    for (uint32_t i = 0; i < out; ++i) EXPECT_TRUE(same_float(y[i], (*ref)[i])) << format_name(f) << " " << i;
    dsp().reset_pool();
  }
}

// The whole path on the DSP: its quantizer's output fed to its matmul.
TEST_F(HexagonDsp, QuantizeThenMatmulOnTheDspMatchesTheReferenceChain) {
  const uint32_t n = 3, in = 96, out = 7;
  const std::vector<float> x = testing::random_activations(n, in, 77);
  Result<QuantizedActivations> a = quantize_activations(x, n, in);
  ASSERT_TRUE(a.ok());
  for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    const std::vector<uint8_t> w = testing::quantized_weights(f, out, in, 78);
    Result<std::vector<float>> ref = matmul(f, w, out, *a);
    const PoolBuffer xb = put(x), qb = put(nullptr, a->q.size()), db = put(nullptr, a->d.size() * 2);
    const PoolBuffer wb = put(w), yb = put(nullptr, n * out * 4);
    ASSERT_TRUE(dsp().quantize(xb, qb, db, n, in).ok());
    ASSERT_TRUE(dsp().matmul(f, wb, qb, db, yb, n, in, out).ok());
    const std::vector<float> y = get<float>(yb);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_TRUE(same_float(y[i], (*ref)[i])) << format_name(f) << " " << i;
    dsp().reset_pool();
  }
}

}  // namespace
}  // namespace tandem::hexagon
