// Attention's products over an f16 cache (kv_products.h): the fp16-arithmetic kernels against a
// double-precision reference, their fp32 rescue of runs that overflow fp16, and which arithmetic
// the public entry points take. The fp16 kernels exist on aarch64 with asimdhp (qemu -cpu
// neoverse-n1 or max); elsewhere those tests skip.
#include "devices/cpu/matmul/kv_products.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "matmul_reference.h"

namespace tandem::cpu {
namespace {

using testing::TestWeight;

ThreadPool& one_thread() {
  static ThreadPool p(1);
  return p;
}

bool fp16_here() { return detail::kv_fp16_kernels() != nullptr; }

// fp16's unit roundoff: the error of one rounding relative to the value.
constexpr double kFp16Eps = 1.0 / 2048;

// Softmax-like rows: m rows of n non-negative values summing to 1 (stride ld; padding NaN).
std::vector<float> make_probabilities(int64_t m, int64_t n, int64_t ld, uint32_t seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> p(size_t(m * ld), std::nanf(""));
  for (int64_t i = 0; i < m; ++i) {
    float sum = 0;
    for (int64_t r = 0; r < n; ++r) sum += p[i * ld + r] = std::exp(4.0f * e(rng)) - 1.0f;
    for (int64_t r = 0; r < n; ++r) p[i * ld + r] /= sum;
  }
  return p;
}

struct Shape {
  int64_t m, rows, cols;
};
// Query rows around the kernels' tiles (8 for scores, 6 for sums), cache rows not a multiple of
// the 8-row runs, heads of whole and partial 64-column runs and 32-column tiles.
constexpr Shape kShapes[] = {{1, 37, 64}, {5, 45, 40}, {6, 8, 128}, {8, 300, 64}, {9, 19, 96}, {13, 51, 256}};

TEST(KvProducts, Fp16ScoresMatchTheReference) {
  if (!fp16_here()) GTEST_SKIP() << "no fp16 vector arithmetic on this CPU";
  for (const Shape& s : kShapes) {
    SCOPED_TRACE("m " + std::to_string(s.m) + " rows " + std::to_string(s.rows) + " cols " + std::to_string(s.cols));
    const TestWeight keys = testing::make_weight(DType::F16, s.rows, s.cols, 11, 16);
    const int64_t ldq = s.cols + 3;
    const std::vector<float> q = testing::make_activations(s.m, s.cols, ldq, 12);
    const std::vector<double> ref = testing::reference_matmul(keys, q.data(), s.m, ldq);
    const std::vector<double> scale = testing::error_scale(keys, q.data(), s.m, ldq);
    std::vector<float> y16(size_t(s.m * s.rows)), y32(y16.size());
    detail::key_scores_with(true, one_thread(), keys.view(), q.data(), s.m, ldq, y16.data(), s.rows);
    detail::key_scores_with(false, one_thread(), keys.view(), q.data(), s.m, ldq, y32.data(), s.rows);
    double worst = 0, sum_sq = 0;
    int differ = 0;
    for (size_t j = 0; j < ref.size(); ++j) {
      const double err = std::fabs(y16[j] - ref[j]) / scale[j];
      worst = std::max(worst, err);
      sum_sq += err * err;
      differ += y16[j] != y32[j];
    }
    // Rounding q, each product and up to 8 fp16 additions per lane: at worst about 10 roundings
    // of sum |q||k|; typically a few.
    EXPECT_LT(worst, 10 * kFp16Eps);
    EXPECT_LT(std::sqrt(sum_sq / double(ref.size())), 2 * kFp16Eps);
    // ...and it is fp16 arithmetic, not the fp32 kernel under another name.
    EXPECT_GT(differ, 0);
  }
}

TEST(KvProducts, Fp16SumsMatchTheReference) {
  if (!fp16_here()) GTEST_SKIP() << "no fp16 vector arithmetic on this CPU";
  for (const Shape& s : kShapes) {
    SCOPED_TRACE("m " + std::to_string(s.m) + " rows " + std::to_string(s.rows) + " cols " + std::to_string(s.cols));
    const TestWeight values = testing::make_weight(DType::F16, s.rows, s.cols, 21, 32);
    const int64_t ldp = s.rows + 5, ldy = s.cols + 2;
    const std::vector<float> p = make_probabilities(s.m, s.rows, ldp, 22);
    // y starts non-zero (the products add into it); its padding must stay untouched.
    std::vector<float> y16(size_t(s.m * ldy), -7.0f);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t c = 0; c < s.cols; ++c) y16[i * ldy + c] = 0.25f * float((i + c) % 5);
    std::vector<float> y32 = y16;
    const std::vector<float> y0 = y16;
    detail::value_sums_with(true, values.view(), p.data(), s.m, ldp, y16.data(), ldy);
    detail::value_sums_with(false, values.view(), p.data(), s.m, ldp, y32.data(), ldy);
    double worst = 0, sum_sq = 0;
    int differ = 0;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t c = 0; c < s.cols; ++c) {
        double ref = y0[i * ldy + c], scale = 0;
        for (int64_t r = 0; r < s.rows; ++r) {
          ref += double(p[i * ldp + r]) * values.values[r * s.cols + c];
          scale += std::fabs(double(p[i * ldp + r]) * values.values[r * s.cols + c]);
        }
        const double err = std::fabs(y16[i * ldy + c] - ref) / (scale + 1e-30);
        worst = std::max(worst, err);
        sum_sq += err * err;
        differ += y16[i * ldy + c] != y32[i * ldy + c];
      }
      for (int64_t c = s.cols; c < ldy; ++c) EXPECT_EQ(y16[i * ldy + c], -7.0f) << "padding of row " << i;
    }
    EXPECT_LT(worst, 10 * kFp16Eps);
    EXPECT_LT(std::sqrt(sum_sq / double(s.m * s.cols)), 2 * kFp16Eps);
    EXPECT_GT(differ, 0);
  }
}

// Cached values near fp16's top, all of one sign: 8 products of one run sum past 65504. The run is
// redone in fp32, so the result is finite and fp32-accurate.
TEST(KvProducts, Fp16RunsThatOverflowAreRedoneInFp32) {
  if (!fp16_here()) GTEST_SKIP() << "no fp16 vector arithmetic on this CPU";
  const int64_t rows = 16, cols = 64;
  std::vector<uint16_t> big(size_t(rows * cols));
  for (size_t j = 0; j < big.size(); ++j) big[j] = f32_to_fp16(30000.0f + float(j % 7));
  const WeightView cache{DType::F16, big.data(), rows, cols, size_t(cols) * 2};
  std::vector<float> q(size_t(cols), 0.9f), p(size_t(rows), 1.0f / float(rows));
  std::vector<float> y(static_cast<size_t>(rows)), sums(static_cast<size_t>(cols), 0.0f);
  detail::key_scores_with(true, one_thread(), cache, q.data(), 1, cols, y.data(), rows);
  detail::value_sums_with(true, cache, p.data(), 1, rows, sums.data(), cols);
  for (int64_t r = 0; r < rows; ++r) {
    double ref = 0;
    for (int64_t c = 0; c < cols; ++c) ref += 0.9 * fp16_to_f32(big[r * cols + c]);
    ASSERT_TRUE(std::isfinite(y[r])) << "score " << r;
    EXPECT_NEAR(y[r], ref, 1e-5 * 0.9 * 30000 * cols) << "score " << r;
  }
  for (int64_t c = 0; c < cols; ++c) {
    double ref = 0;
    for (int64_t r = 0; r < rows; ++r) ref += fp16_to_f32(big[r * cols + c]) / double(rows);
    ASSERT_TRUE(std::isfinite(sums[c])) << "sum " << c;
    EXPECT_NEAR(sums[c], ref, 1e-5 * 30000) << "sum " << c;
  }
}

// The AVX-512 decode kernels (fp32 arithmetic, cached values widened exactly) against the fp64
// reference, over f16 and q8_0 caches: query rows up to kKvWideMaxQueryRows, cache rows past whole
// 16-row blocks and the four blocks the kernels prefetch ahead, heads of 1..16 column chunks, cache
// rows a token-major stride apart.
TEST(KvProducts, WideKernelsMatchTheReference) {
  if (!detail::kv_wide_kernels()) GTEST_SKIP() << "no AVX-512 decode kernels on this CPU";
  constexpr Shape kWide[] = {{1, 37, 64}, {8, 4097, 64}, {7, 16, 128}, {16, 95, 64}, {3, 70, 16}, {5, 33, 256},
                             {12, 50, 96}, {2, 1, 80}};
  for (const DType type : {DType::F16, DType::Q8_0}) {
    for (const Shape& s : kWide) {
      if (type == DType::Q8_0 && s.cols % 32 != 0) continue;  // q8_0 heads are whole blocks
      SCOPED_TRACE(std::string(dtype_name(type)) + " m " + std::to_string(s.m) + " rows " + std::to_string(s.rows) +
                   " cols " + std::to_string(s.cols));
      // Token-major: the head's row is the second of four in a token's row.
      const int64_t stride = 4 * s.cols;
      const TestWeight cache = testing::make_weight(type, s.rows, stride, 31, 16);
      WeightView head = cache.view();
      head.data = static_cast<const uint8_t*>(head.data) + row_bytes(type, s.cols);
      head.cols = s.cols;
      ASSERT_TRUE(detail::kv_wide_applies(head, s.m));
      const auto cached = [&](int64_t r, int64_t c) { return cache.values[size_t(r * stride + s.cols + c)]; };
      const int64_t ldq = s.cols + 3, ldy = s.rows + 4;
      const std::vector<float> q = testing::make_activations(s.m, s.cols, ldq, 32);
      std::vector<float> y(size_t(s.m * ldy), -7.0f);
      detail::key_scores_with(false, one_thread(), head, q.data(), s.m, ldq, y.data(), ldy);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t r = 0; r < s.rows; ++r) {
          double ref = 0, scale = 0;
          for (int64_t c = 0; c < s.cols; ++c) {
            ref += double(q[i * ldq + c]) * cached(r, c);
            scale += std::fabs(double(q[i * ldq + c]) * cached(r, c));
          }
          // fp32 products and sums over at most 256 columns: well inside 64 roundings.
          ASSERT_NEAR(y[i * ldy + r], ref, 64 * 0x1p-24 * scale + 1e-30) << "score " << i << ", " << r;
        }
        for (int64_t r = s.rows; r < ldy; ++r) ASSERT_EQ(y[i * ldy + r], -7.0f) << "padding of score row " << i;
      }
      // Sums add into y, whose padding stays.
      const int64_t ldp = s.rows + 5, ldo = s.cols + 2;
      const std::vector<float> p = make_probabilities(s.m, s.rows, ldp, 33);
      std::vector<float> out(size_t(s.m * ldo), -7.0f);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t c = 0; c < s.cols; ++c) out[i * ldo + c] = 0.25f * float((i + c) % 5);
      const std::vector<float> out0 = out;
      detail::value_sums_with(false, head, p.data(), s.m, ldp, out.data(), ldo);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t c = 0; c < s.cols; ++c) {
          double ref = out0[i * ldo + c], scale = std::fabs(ref);
          for (int64_t r = 0; r < s.rows; ++r) {
            ref += double(p[i * ldp + r]) * cached(r, c);
            scale += std::fabs(double(p[i * ldp + r]) * cached(r, c));
          }
          // fp32 sums over up to 4097 rows: a relative bound of rows x 2^-24 of the summed |terms|.
          ASSERT_NEAR(out[i * ldo + c], ref, double(s.rows + 2) * 0x1p-24 * scale + 1e-30)
              << "sum " << i << ", " << c;
        }
        for (int64_t c = s.cols; c < ldo; ++c) ASSERT_EQ(out[i * ldo + c], -7.0f) << "padding of sum row " << i;
      }
    }
  }
}

// The public entry points take fp16 exactly where the CPU has it and the oracle is off.
TEST(KvProducts, ArithmeticFollowsTheCpuAndThePrecision) {
  const GemmPrecision before = gemm_precision();
  set_gemm_precision(GemmPrecision::kFastest);
  EXPECT_EQ(std::string(kv_f16_arithmetic()), cpu_features().fp16_arith ? "fp16" : "fp32");
  EXPECT_EQ(fp16_here(), cpu_features().fp16_arith);
  set_gemm_precision(GemmPrecision::kFp32);
  EXPECT_EQ(std::string(kv_f16_arithmetic()), "fp32");
  set_gemm_precision(before);
}

}  // namespace
}  // namespace tandem::cpu
