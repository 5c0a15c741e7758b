// The host oracle against independent computations: core's (ggml's) quantizer and fp16
// conversion, plain-int block sums over separately unpacked codes, and fp64 sums.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "hexagon/reference.h"
#include "hexagon_test_support.h"

namespace tandem::hexagon {
namespace {

using testing::quantized_weights;
using testing::random_activations;
using testing::raw_weights;

TEST(HexagonReference, Fp16WidensExactlyForEveryBitPattern) {
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(testing::bits_of(fp16_bits_to_f32(uint16_t(h))), testing::bits_of(fp16_to_f32(fp16_t(h)))) << h;
}

TEST(HexagonReference, QuantizeValueRoundsHalfAwayAndSaturates) {
  EXPECT_EQ(quantize_value(2.5f), 3);
  EXPECT_EQ(quantize_value(-2.5f), -3);
  EXPECT_EQ(quantize_value(2.4999998f), 2);
  EXPECT_EQ(quantize_value(-0.5f), -1);
  EXPECT_EQ(quantize_value(127.49f), 127);
  EXPECT_EQ(quantize_value(1e30f), 127);
  EXPECT_EQ(quantize_value(-std::numeric_limits<float>::infinity()), -127);
  EXPECT_EQ(quantize_value(std::nanf("")), 0);
}

// ggml's quantize_row_q8_0_ref (core/quant.cpp is pinned to it by golden bytes): same values,
// same fp16 scales, on finite rows of every magnitude, zero blocks and exact halves included.
TEST(HexagonReference, QuantizeMatchesGgmlQ8_0) {
  for (uint32_t in : {32u, 96u, 4096u}) {
    std::vector<float> x = random_activations(3, in, in);
    for (uint32_t j = 0; j < 32; ++j) x[j] = 0.0f;                 // an all-zero block
    if (in >= 64) {  // d = 127 / 127 = 1: every x * id is an exact half, rounded away from zero
      for (uint32_t j = 32; j < 64; ++j) x[j] = float(int(j) - 48) + 0.5f;
      x[32] = 127.0f;
    }
    x[in + 5] = 3e38f;                                             // a huge block
    x[2 * in + 1] = 1e-38f;                                        // a subnormal-scale block next to normal ones
    Result<QuantizedActivations> a = quantize_activations(x, 3, in);
    ASSERT_TRUE(a.ok()) << a.status().message();
    std::vector<BlockQ8_0> g(in / 32);
    for (uint32_t r = 0; r < 3; ++r) {
      quantize_row_q8_0(x.data() + size_t(r) * in, g.data(), in);
      for (uint32_t b = 0; b < in / 32; ++b) {
        ASSERT_EQ(a->d[r * (in / 32) + b], g[b].d) << "row " << r << " block " << b;
        for (uint32_t j = 0; j < 32; ++j) ASSERT_EQ(a->q[r * a->stride() + b * 32 + j], g[b].qs[j]) << r << " " << b << " " << j;
      }
      for (size_t j = in; j < a->stride(); ++j) ASSERT_EQ(a->q[r * a->stride() + j], 0) << "padding";
    }
  }
}

TEST(HexagonReference, ShapesOutsideTheContractAreErrors) {
  const std::vector<float> x(4096, 1.0f);
  EXPECT_FALSE(quantize_activations(x, 1, 48).ok());
  EXPECT_FALSE(quantize_activations(x, 1, 0).ok());
  EXPECT_FALSE(quantize_activations(x, 0, 32).ok());
  EXPECT_FALSE(quantize_activations(x, 2, 4096).ok());  // too few floats
  EXPECT_FALSE(check_activation_shape(1, THX_MAX_IN + 32).ok());
  Result<QuantizedActivations> a = quantize_activations(x, 1, 64);
  ASSERT_TRUE(a.ok());
  const std::vector<uint8_t> w = quantized_weights(WeightFormat::kQ8_0, 2, 64, 1);
  EXPECT_FALSE(matmul(WeightFormat::kQ8_0, w, 3, *a).ok());  // 2 rows given, 3 asked
  EXPECT_FALSE(matmul(WeightFormat::kQ8_0, w, 0, *a).ok());
  EXPECT_TRUE(matmul(WeightFormat::kQ8_0, w, 2, *a).ok());
}

// The codes of weight row `row` unpacked by hand from the layout's description.
std::vector<int> codes(WeightFormat f, const std::vector<uint8_t>& w, uint32_t row, uint32_t in) {
  std::vector<int> c(in);
  const uint8_t* r = w.data() + weight_bytes(f, row, in);
  for (uint32_t b = 0; b < in / 32; ++b) {
    const uint8_t* qs = r + b * block_bytes(f) + 2;
    for (uint32_t j = 0; j < 32; ++j)
      c[b * 32 + j] = f == WeightFormat::kQ8_0 ? int(int8_t(qs[j])) : int(j < 16 ? qs[j] & 15 : qs[j - 16] >> 4) - 8;
  }
  return c;
}

double scale_of(const uint8_t* block) { return double(fp16_to_f32(fp16_t(block[0] | (block[1] << 8)))); }

TEST(HexagonReference, MatmulAgreesWithPlainIntegersAndFp64) {
  for (WeightFormat f : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    for (uint32_t in : {32u, 96u, 1024u}) {
      const uint32_t n = 3, out = 7;
      const std::vector<float> x = random_activations(n, in, 7 + in);
      Result<QuantizedActivations> a = quantize_activations(x, n, in);
      ASSERT_TRUE(a.ok());
      const std::vector<uint8_t> w = raw_weights(f, out, in, 11 + in);
      Result<std::vector<float>> y = matmul(f, w, out, *a);
      ASSERT_TRUE(y.ok()) << y.status().message();
      for (uint32_t r = 0; r < n; ++r) {
        for (uint32_t c = 0; c < out; ++c) {
          const std::vector<int> wc = codes(f, w, c, in);
          double exact = 0.0, magnitude = 0.0;
          for (uint32_t b = 0; b < in / 32; ++b) {
            long isum = 0;
            for (uint32_t j = 0; j < 32; ++j) isum += long(wc[b * 32 + j]) * a->q[r * a->stride() + b * 32 + j];
            const uint8_t* block = w.data() + weight_bytes(f, c, in) + b * block_bytes(f);
            ASSERT_EQ(block_dot(f, block, a->q.data() + r * a->stride() + b * 32), isum) << "block " << b;
            const double term = scale_of(block) * double(fp16_to_f32(a->d[r * (in / 32) + b])) * double(isum);
            exact += term;
            magnitude += std::fabs(term);
          }
          // Each of the 2 * blocks fp32 roundings is within 2^-24 of what it rounds.
          const double bound = 2.0 * (in / 32 + 1) * 0x1p-24 * magnitude + 1e-30;
          EXPECT_NEAR(double((*y)[r * out + c]), exact, bound) << format_name(f) << " in " << in << " " << r << "," << c;
        }
      }
    }
  }
}

// The association is part of the contract: (dw * dx) * isum, blocks in order from +0. These
// three blocks (found by a search) give other fp32 sums for dw * (dx * isum) and for the blocks
// in reverse order.
TEST(HexagonReference, SumsBlocksInTheDocumentedOrder) {
  struct B {
    fp16_t dw, dx;
    int w0, x0, w1, x1;  // isum = w0 * x0 + w1 * x1
  };
  const B blocks[3] = {{0x3850, 0x3ac6, 127, 86, 75, 1},     // 10997
                       {0x3506, 0x397c, -127, 18, -70, 1},   // -2356
                       {0x3291, 0x371b, 127, 73, 76, 1}};    // 9347
  QuantizedActivations a;
  a.n = 1;
  a.in = 96;
  a.q.assign(a.stride(), 0);
  std::vector<uint8_t> w(3 * THX_Q8_0_BLOCK_BYTES, 0);
  float dw[3], dx[3], isum[3];
  for (int k = 0; k < 3; ++k) {
    const B& b = blocks[k];
    a.d.push_back(b.dx);
    a.q[32 * k] = int8_t(b.x0);
    a.q[32 * k + 1] = int8_t(b.x1);
    uint8_t* blk = w.data() + k * THX_Q8_0_BLOCK_BYTES;
    blk[0] = uint8_t(b.dw);
    blk[1] = uint8_t(b.dw >> 8);
    blk[2] = uint8_t(int8_t(b.w0));
    blk[3] = uint8_t(int8_t(b.w1));
    dw[k] = fp16_to_f32(b.dw);
    dx[k] = fp16_to_f32(b.dx);
    isum[k] = float(b.w0 * b.x0 + b.w1 * b.x1);
  }
  Result<std::vector<float>> y = matmul(WeightFormat::kQ8_0, w, 1, a);
  ASSERT_TRUE(y.ok());
  float expected = 0.0f, other_assoc = 0.0f, reversed = 0.0f;
  for (int k = 0; k < 3; ++k) expected += (dw[k] * dx[k]) * isum[k];
  for (int k = 0; k < 3; ++k) other_assoc += dw[k] * (dx[k] * isum[k]);
  for (int k = 2; k >= 0; --k) reversed += (dw[k] * dx[k]) * isum[k];
  EXPECT_EQ(testing::bits_of((*y)[0]), testing::bits_of(expected));
  EXPECT_NE(testing::bits_of(expected), testing::bits_of(other_assoc));
  EXPECT_NE(testing::bits_of(expected), testing::bits_of(reversed));
}

}  // namespace
}  // namespace tandem::hexagon
