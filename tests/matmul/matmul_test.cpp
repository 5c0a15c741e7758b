// Matmul kernels against a double-precision reference, for every weight type on every ISA path
// this CPU can run, over shapes that are not multiples of the tile sizes, 1-3 threads, padded
// strides (the padding holds NaN in x and sentinels in y), and both GEMM precisions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/half.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/matmul/matmul_internal.h"
#include "devices/cpu/matmul/packed_weight.h"
#include "matmul_reference.h"

namespace tandem::cpu {
namespace {

using detail::MatmulIsa;
using testing::TestWeight;

ThreadPool& pool(int threads) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

constexpr float kSentinel = -12345.678f;
constexpr DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0};
// This architecture's kernel families and the portable oracle.
#if defined(__aarch64__)
constexpr MatmulIsa kIsas[] = {MatmulIsa::kPortable, MatmulIsa::kNeon};
#else
constexpr MatmulIsa kIsas[] = {MatmulIsa::kPortable, MatmulIsa::kAvx2, MatmulIsa::kAvx512};
#endif

bool bf16_used(MatmulIsa isa, GemmPrecision p, DType t, int64_t m) {
  return isa == MatmulIsa::kAvx512 && detail::bf16_gemm_taken(p, t) && detail::bf16_gemm_available() &&
         m >= kBf16MinRows && m > detail::kGemvMaxM &&
         (t == DType::BF16 || t == DType::F16 || t == DType::Q8_0 || t == DType::Q4_0);
}

struct Case {
  int64_t m, rows, cols;
};

// With WeightView::half_activations, AVX-512 products of 16-bit weights outside the bf16 GEMM
// see activations rounded to fp16 after scaling by a power of two: each moves by at most 2^-11
// of itself (round to nearest, 11 significant bits), so |sum w e| <= 2^-11 |x| |w|.
constexpr double kHalfActivationTolerance = 0x1p-11 + 1e-5;

bool half_activations_used(MatmulIsa isa, DType t, bool asked, bool bf16) {
  return asked && isa == MatmulIsa::kAvx512 && (t == DType::F16 || t == DType::BF16) && !bf16;
}

// x's m rows as the fp16 path sees them: each scaled so its largest magnitude amax = f 2^e (f in
// [0.5, 1)) becomes f 2^15, rounded to fp16 and scaled back. A row the kernels keep in fp32
// (non-finite, or amax below 1e-30) comes back as it is.
std::vector<float> half_grid(const std::vector<float>& x, int64_t m, int64_t cols, int64_t ldx) {
  std::vector<float> out = x;
  for (int64_t i = 0; i < m; ++i) {
    float* row = out.data() + i * ldx;
    float amax = 0;
    bool nan = false;
    for (int64_t k = 0; k < cols; ++k) {
      nan = nan || std::isnan(row[k]);
      amax = std::max(amax, std::fabs(row[k]));
    }
    if (nan || !(amax <= 3.4e38f) || !(amax >= 1e-30f)) continue;
    int e;
    std::frexp(amax, &e);
    for (int64_t k = 0; k < cols; ++k) row[k] = std::ldexp(fp16_to_f32(f32_to_fp16(std::ldexp(row[k], 15 - e))), e - 15);
  }
  return out;
}

// Runs one configuration and checks values, tolerance and the untouched padding of y.
// Returns the largest error relative to |x_i||W_r| (to let callers check bf16 was really used).
// half_activations: the view allows fp16 activations (WeightView::half_activations).
double check_case(MatmulIsa isa, GemmPrecision precision, int threads, const TestWeight& w, const std::vector<float>& x,
                  int64_t m, int64_t ldx, const std::vector<double>& ref, const std::vector<double>& scale,
                  bool half_activations = false) {
  const int64_t ldy = w.rows + 5;
  std::vector<float> y(size_t(m * ldy + 7), kSentinel);
  WeightView view = w.view();
  view.half_activations = half_activations;
  detail::matmul_with(isa, precision, pool(threads), view, x.data(), m, ldx, y.data(), ldy);
  const bool bf16 = bf16_used(isa, precision, w.type, m);
  const bool half = half_activations_used(isa, w.type, half_activations, bf16);
  const double tol = bf16 ? 1e-2 : half ? kHalfActivationTolerance : 1e-5;
  // With fp16 activations the kernels must also match, to fp32 rounding, the reference on the
  // rounded activations: the bound above alone would let a few lost columns through.
  const std::vector<double> ref_half =
      half ? testing::reference_matmul(w, half_grid(x, m, w.cols, ldx).data(), m, ldx) : std::vector<double>{};
  double worst = 0;
  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < ldy; ++r) {
      const float got = y[size_t(i * ldy + r)];
      if (r >= w.rows) {
        if (std::memcmp(&got, &kSentinel, 4) != 0 && ++failures <= 5)
          ADD_FAILURE() << "wrote padding y[" << i << "," << r << "] = " << got;
        continue;
      }
      const double want = ref[size_t(i * w.rows + r)];
      const double s = scale[size_t(i * w.rows + r)] + 1e-30;
      const double err = std::fabs(double(got) - want) / s;
      if (!(err <= tol) && ++failures <= 5)
        ADD_FAILURE() << "y[" << i << "," << r << "] = " << got << ", want " << want << " (rel err " << err << ")";
      if (half) {
        const double on_grid = ref_half[size_t(i * w.rows + r)];
        if (!(std::fabs(double(got) - on_grid) / s <= 1e-5) && ++failures <= 5)
          ADD_FAILURE() << "y[" << i << "," << r << "] = " << got << ", want " << on_grid << " on the fp16 grid";
      }
      if (err > worst) worst = err;
    }
  }
  for (size_t j = size_t(m * ldy); j < y.size(); ++j)
    if (std::memcmp(&y[j], &kSentinel, 4) != 0 && ++failures <= 5) ADD_FAILURE() << "wrote past y's end";
  return worst;
}

class MatmulTest : public ::testing::TestWithParam<std::tuple<DType, MatmulIsa>> {
 protected:
  void SetUp() override {
    if (!detail::isa_available(isa())) GTEST_SKIP() << detail::isa_name(isa()) << " not supported by this CPU";
  }
  DType type() const { return std::get<0>(GetParam()); }
  MatmulIsa isa() const { return std::get<1>(GetParam()); }
  // Views with and without fp16 activations where this ISA and type have them.
  std::vector<bool> half_options() const {
    if (half_activations_used(isa(), type(), true, false)) return {false, true};
    return {false};
  }
  std::vector<GemmPrecision> precisions() const {
    if (isa() == MatmulIsa::kAvx512 && detail::bf16_gemm_available())
      return {GemmPrecision::kFp32, GemmPrecision::kBf16Activations};
    return {GemmPrecision::kFp32};
  }
};

TEST_P(MatmulTest, MatchesReference) {
  std::vector<int64_t> col_list = {32, 64, 96, 2048};
  if (type() == DType::F32 || type() == DType::F16 || type() == DType::BF16) {
    col_list.push_back(5);    // shorter than one vector
    col_list.push_back(300);  // crosses the 256-column cache block, odd tail
  }
  for (int64_t cols : col_list) {
    for (int64_t rows : {1, 17, 63, 200}) {
      const TestWeight w = testing::make_weight(type(), rows, cols, uint32_t(rows * 7919 + cols), rows % 2 ? 4 : 0);
      for (int64_t m : {1, 2, 3, 7, 16, 33, 130}) {
        const int64_t ldx = cols + 3;
        const std::vector<float> x = testing::make_activations(m, cols, ldx, uint32_t(m * 31 + cols));
        const std::vector<double> ref = testing::reference_matmul(w, x.data(), m, ldx);
        const std::vector<double> scale = testing::error_scale(w, x.data(), m, ldx);
        for (GemmPrecision p : precisions()) {
          for (int threads : {1, 2, 3}) {
            for (bool half : half_options()) {
              SCOPED_TRACE("m=" + std::to_string(m) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                           " threads=" + std::to_string(threads) +
                           (p == GemmPrecision::kFp32 ? " fp32" : " bf16-activations") + (half ? " half-activations" : ""));
              check_case(isa(), p, threads, w, x, m, ldx, ref, scale, half);
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

// The bf16 GEMM must really be taken where it is selected: its error is far above fp32 rounding
// (and within the bf16 bound, which check_case verifies).
TEST_P(MatmulTest, Bf16PathIsUsedForLongPrompts) {
  if (!bf16_used(isa(), GemmPrecision::kBf16Activations, type(), 64)) GTEST_SKIP() << "no bf16 GEMM for this case";
  const TestWeight w = testing::make_weight(type(), 64, 512, 5);
  const std::vector<float> x = testing::make_activations(64, 512, 512, 6);
  const auto ref = testing::reference_matmul(w, x.data(), 64, 512);
  const auto scale = testing::error_scale(w, x.data(), 64, 512);
  EXPECT_GT(check_case(isa(), GemmPrecision::kBf16Activations, 2, w, x, 64, 512, ref, scale), 1e-5);
  EXPECT_LT(check_case(isa(), GemmPrecision::kFp32, 2, w, x, 64, 512, ref, scale), 1e-5);
}

// Activations far outside fp16's range (1e6 overflows it; 1e-7 is below its normals) keep their
// precision with fp16 activations: they are scaled by a power of two before rounding (and kept
// in fp32 where the scale would not fit a float, 1e-35).
TEST_P(MatmulTest, DecodeKeepsActivationsOutsideTheFp16Range) {
  const bool plain = type() == DType::F32 || type() == DType::F16 || type() == DType::BF16;
  const int64_t rows = 40, cols = plain ? 2048 + 29 : 2048 + 32;  // a partial last block (both halves) where the type has one
  const TestWeight w = testing::make_weight(type(), rows, cols, 21);
  for (float magnitude : {1e6f, 1e-7f, 1e-25f, 1e-35f}) {
    std::vector<float> x = testing::make_activations(3, cols, cols, 22);
    for (float& v : x) v *= magnitude;
    SCOPED_TRACE("activations x " + std::to_string(magnitude));
    const auto ref = testing::reference_matmul(w, x.data(), 3, cols);
    const auto scale = testing::error_scale(w, x.data(), 3, cols);
    for (int64_t m : {1, 3}) {  // the m = 1 kernel's fp16 row and the grid of the others
      const double worst = check_case(isa(), GemmPrecision::kFp32, 2, w, x, m, cols, ref, scale, true);
      EXPECT_LE(worst, half_activations_used(isa(), type(), true, false) ? kHalfActivationTolerance : 1e-5);
    }
  }
}

TEST_P(MatmulTest, NanInActivationsPropagatesToItsRowOnly) {
  const int64_t rows = 40, cols = 96;
  const TestWeight w = testing::make_weight(type(), rows, cols, 11);
  for (int64_t m : {1, 5, 33}) {
    for (GemmPrecision p : precisions()) {
      std::vector<float> x = testing::make_activations(m, cols, cols, 12);
      const int64_t bad = m / 2;
      x[size_t(bad * cols + 37)] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> y(size_t(m * rows));
      detail::matmul_with(isa(), p, pool(2), w.view(), x.data(), m, cols, y.data(), rows);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t r = 0; r < rows; ++r) {
          const float v = y[size_t(i * rows + r)];
          if (i == bad) {
            ASSERT_TRUE(std::isnan(v)) << "m=" << m << " r=" << r;
          } else {
            ASSERT_TRUE(std::isfinite(v)) << "m=" << m << " i=" << i << " r=" << r;
          }
        }
    }
  }
}

// The block types without kernels of their own (Q4_1 ... IQ4_XS): dequantized rows into each ISA's
// f32 decode kernel, panels dequantized for its f32 GEMM (also when bf16 activations are asked
// for), so the error is fp32 rounding against the fp64 reference over ggml's dequantized values.
constexpr DType kDequantizedTypes[] = {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K,   DType::Q3_K,
                                       DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

class DequantizedTypes : public MatmulTest {};

TEST_P(DequantizedTypes, MatchWithinFp32Rounding) {
  const int64_t block = dtype_traits(type()).block_size;
  for (int64_t cols : {block, 3 * block, int64_t(2048)}) {
    for (int64_t rows : {1, 17, 63}) {
      const TestWeight w = testing::make_weight(type(), rows, cols, uint32_t(rows * 131 + cols), rows % 2 ? 4 : 0);
      for (int64_t m : {1, 3, 9, 33}) {
        const int64_t ldx = cols + 3;
        const std::vector<float> x = testing::make_activations(m, cols, ldx, uint32_t(m * 37 + cols));
        const std::vector<double> ref = testing::reference_matmul(w, x.data(), m, ldx);
        const std::vector<double> scale = testing::error_scale(w, x.data(), m, ldx);
        for (GemmPrecision p : precisions())
          for (int threads : {1, 2}) {
            SCOPED_TRACE("m=" + std::to_string(m) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                         " threads=" + std::to_string(threads) + (p == GemmPrecision::kFp32 ? " fp32" : " bf16-asked"));
            EXPECT_LE(check_case(isa(), p, threads, w, x, m, ldx, ref, scale), 1e-5);
            if (HasFailure()) return;
          }
      }
    }
  }
}

TEST_P(DequantizedTypes, NanInActivationsPropagatesToItsRowOnly) {
  const int64_t rows = 20, cols = dtype_traits(type()).block_size * 2;
  const TestWeight w = testing::make_weight(type(), rows, cols, 13);
  for (int64_t m : {1, 20}) {
    std::vector<float> x = testing::make_activations(m, cols, cols, 14);
    const int64_t bad = m / 2;
    x[size_t(bad * cols + cols / 2 + 3)] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> y(size_t(m * rows));
    detail::matmul_with(isa(), GemmPrecision::kFp32, pool(2), w.view(), x.data(), m, cols, y.data(), rows);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(std::isnan(y[size_t(i * rows + r)]), i == bad) << "m=" << m << " i=" << i << " r=" << r;
  }
}

// Decode and prefill on packed Q4_0 / Q8_0 weights with int8 activations, whole weights and row
// slices that start at a group boundary. The bound is rigorous: rounding each activation to its block's
// 1/127 grid moves it by at most amax/254, so the error vector e has |e| <= sqrt(32)/254 |x|
// (amax <= the block's norm), and |sum w e| <= |w| |e| = 0.0223 |x| |w|.
constexpr double kInt8DecodeTolerance = 0.0223 + 1e-5;

// The activations as the int8 path sees them: each 32-column block on its 1/127 grid, rounded as
// the kernels round (fp32 x * (127 / amax), to nearest even). Against these the packed kernels
// must agree to fp32 rounding: the rigorous bound above is loose enough to hide a weight wrong by
// a level or a percent, this one is not.
std::vector<float> int8_grid(const std::vector<float>& x, int64_t m, int64_t cols, int64_t ldx) {
  std::vector<float> out = x;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t b = 0; b < cols / 32; ++b) {
      float* xb = out.data() + i * ldx + b * 32;
      float amax = 0;
      for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(xb[k]));
      const float scale = amax / 127.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
      for (int k = 0; k < 32; ++k) xb[k] = scale * std::nearbyint(xb[k] * inv);
    }
  return out;
}

// Per type and ISA: kAvx512 runs the VNNI kernels where the CPU has VNNI (else the AVX2 ones),
// kAvx2 the AVX2 kernels over the same packed weights.
class PackedDecode : public ::testing::TestWithParam<std::tuple<DType, MatmulIsa>> {
 protected:
  void SetUp() override {
    if (!detail::isa_available(isa())) GTEST_SKIP() << detail::isa_name(isa()) << " not available";
    if (!can_pack_for_decode(type())) GTEST_SKIP() << "no int8 decode kernels on this CPU: decode stays fp32";
  }
  DType type() const { return std::get<0>(GetParam()); }
  MatmulIsa isa() const { return std::get<1>(GetParam()); }
};

TEST_P(PackedDecode, MatchesReferenceWithinTheInt8Bound) {
  double worst = 0;
  const int64_t block = dtype_traits(type()).block_size;
  for (int64_t cols : {block, 3 * block, int64_t(2048)}) {
    for (int64_t rows : {1, 17, 63, 200}) {
      // 200 rows (13 groups: several chunks per thread) only at the narrower widths; at 2048 the
      // case cost most of the suite's sanitizer time and covered nothing the others do not.
      if (rows == 200 && cols == 2048) continue;
      const TestWeight w = testing::make_weight(type(), rows, cols, uint32_t(rows * 31 + cols), rows % 2 ? 2 : 0);
      const auto packed = pack_for_decode(pool(2), w.view());
      ASSERT_TRUE(packed);
      for (int64_t first : {int64_t(0), int64_t(16)}) {
        if (first >= rows) continue;
        const int64_t n = rows - first;
        TestWeight slice = w;  // the rows [first, rows) as the device's row-range view sees them
        slice.rows = n;
        slice.bytes.erase(slice.bytes.begin(), slice.bytes.begin() + ptrdiff_t(size_t(first) * w.row_stride));
        slice.values.erase(slice.values.begin(), slice.values.begin() + ptrdiff_t(first * cols));
        // m > 8 is prefill: the packed GEMM (tiles of 8 rows over L2-sized chunks of groups),
        // taken unless the GEMM precision is fp32 (then the view's plain rows serve, exactly).
        for (int64_t m : {1, 3, 7, 8, 9, 21, 40}) {
          const int64_t ldx = cols + 3, ldy = n + 5;
          const std::vector<float> x = testing::make_activations(m, cols, ldx, uint32_t(m * 17 + cols));
          const auto ref = testing::reference_matmul(slice, x.data(), m, ldx);
          const auto scale = testing::error_scale(slice, x.data(), m, ldx);
          const std::vector<float> x_grid = int8_grid(x, m, cols, ldx);
          const auto ref_grid = testing::reference_matmul(slice, x_grid.data(), m, ldx);
          WeightView view = slice.view();
          view.packed = packed.get();
          view.packed_row0 = first;
          for (int threads : {1, 3}) {
            SCOPED_TRACE("rows=" + std::to_string(rows) + " first=" + std::to_string(first) + " cols=" + std::to_string(cols) +
                         " m=" + std::to_string(m) + " threads=" + std::to_string(threads));
            const bool prefill = m > detail::kGemvMaxM;
            for (GemmPrecision p : {GemmPrecision::kBf16Activations, GemmPrecision::kFp32}) {
              if (!prefill && p == GemmPrecision::kFp32) continue;  // decode ignores the GEMM precision
              const bool int8 = p != GemmPrecision::kFp32 || !prefill;
              std::vector<float> y(size_t(m * ldy), kSentinel);
              detail::matmul_with(isa(), p, pool(threads), view, x.data(), m, ldx, y.data(), ldy);
              for (int64_t i = 0; i < m; ++i)
                for (int64_t r = 0; r < ldy; ++r) {
                  const float got = y[size_t(i * ldy + r)];
                  if (r >= n) {
                    ASSERT_EQ(std::memcmp(&got, &kSentinel, 4), 0) << "wrote padding y[" << i << "," << r << "]";
                    continue;
                  }
                  const double err = std::fabs(double(got) - ref[size_t(i * n + r)]) / (scale[size_t(i * n + r)] + 1e-30);
                  ASSERT_LE(err, int8 ? kInt8DecodeTolerance : 1e-5)
                      << "y[" << i << "," << r << "] = " << got << ", want " << ref[size_t(i * n + r)] << " (int8 " << int8 << ")";
                  if (int8) {
                    worst = std::max(worst, err);
                    const double err_grid = std::fabs(double(got) - ref_grid[size_t(i * n + r)]) / (scale[size_t(i * n + r)] + 1e-30);
                    ASSERT_LE(err_grid, 1e-5) << "y[" << i << "," << r << "] = " << got << ", want "
                                              << ref_grid[size_t(i * n + r)] << " on the int8 grid";
                  }
                }
              // The packed GEMM is the decode kernel over row tiles: each row's sums are bit for
              // bit those of decoding that row alone (the bf16 GEMM's would differ).
              if (prefill && int8 && m == 21)
                for (int64_t i = 0; i < m; ++i) {
                  std::vector<float> one(static_cast<size_t>(n));
                  detail::matmul_with(isa(), p, pool(threads), view, x.data() + i * ldx, 1, ldx, one.data(), n);
                  ASSERT_EQ(std::memcmp(one.data(), y.data() + i * ldy, size_t(n) * 4), 0) << "row " << i;
                }
            }
          }
        }
      }
    }
  }
  // The int8 path really ran: its error is far above fp32 rounding.
  EXPECT_GT(worst, 1e-4);
}

// The extremes of every type's codes (every byte 0x00, 0xFF, 0x80 or 0x7F, scales finite) against
// activations at +-127 on the int8 grid: where a kernel's integer sums could overflow -- the AVX2
// kernels' int16 stage saturates -- the result leaves fp32 rounding of the exact product.
TEST_P(PackedDecode, ExtremeCodesStayExact) {
  const int64_t rows = 20, cols = dtype_traits(type()).block_size * 2;
  TestWeight w = testing::make_weight(type(), rows, cols, 5);
  const size_t block_bytes = dtype_traits(type()).block_bytes;
  // The fp16 fields of a block (scales, minimums), set to a finite value after the fill.
  std::vector<size_t> halves;
  switch (type()) {
    case DType::Q4_1: halves = {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)}; break;
    case DType::Q5_1: halves = {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)}; break;
    case DType::Q2_K: halves = {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)}; break;
    case DType::Q3_K: halves = {offsetof(BlockQ3_K, d)}; break;
    case DType::Q4_K: halves = {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)}; break;
    case DType::Q5_K: halves = {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)}; break;
    case DType::Q6_K: halves = {offsetof(BlockQ6_K, d)}; break;
    default: halves = {0}; break;  // Q4_0, Q8_0, Q5_0, IQ4_NL, IQ4_XS: d first
  }
  for (uint8_t fill : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x80), uint8_t(0x7F)}) {
    for (int64_t r = 0; r < rows; ++r) {
      uint8_t* row = w.bytes.data() + size_t(r) * w.row_stride;
      for (int64_t b = 0; b < cols / dtype_traits(type()).block_size; ++b) {
        uint8_t* blk = row + size_t(b) * block_bytes;
        std::memset(blk, fill, block_bytes);
        const fp16_t h = f32_to_fp16(r % 2 ? 0.0625f : -0.03125f);
        for (size_t off : halves) std::memcpy(blk + off, &h, 2);
      }
      std::vector<float> deq(static_cast<size_t>(cols));
      dequantize_row(type(), row, deq.data(), size_t(cols));
      for (int64_t c = 0; c < cols; ++c) w.values[size_t(r * cols + c)] = deq[size_t(c)];
    }
    const auto packed = pack_for_decode(pool(2), w.view());
    WeightView view = w.view();
    view.packed = packed.get();
    for (float sign : {1.0f, -1.0f, 0.0f}) {  // 0: alternating
      const int64_t m = 3;
      std::vector<float> x(size_t(m * cols));
      for (size_t k = 0; k < x.size(); ++k) x[k] = sign != 0 ? sign : (k % 2 ? 1.0f : -1.0f);
      const std::vector<float> grid = int8_grid(x, m, cols, cols);
      const auto ref = testing::reference_matmul(w, grid.data(), m, cols);
      const auto scale = testing::error_scale(w, grid.data(), m, cols);
      std::vector<float> y(size_t(m * rows));
      detail::matmul_with(isa(), GemmPrecision::kBf16Activations, pool(1), view, x.data(), m, cols, y.data(), rows);
      for (size_t k = 0; k < y.size(); ++k)
        ASSERT_LE(std::fabs(double(y[k]) - ref[k]), 1e-5 * (scale[k] + 1e-30))
            << "fill 0x" << std::hex << int(fill) << std::dec << " sign " << sign << " y[" << k << "] = " << y[k] << ", want " << ref[k];
    }
  }
}

TEST_P(PackedDecode, NanInActivationsPropagatesToItsRowOnly) {
  const int64_t cols = dtype_traits(type()).block_size * 3;
  const TestWeight w = testing::make_weight(type(), 40, cols, 11);
  const auto packed = pack_for_decode(pool(2), w.view());
  WeightView view = w.view();
  view.packed = packed.get();
  for (int64_t m : {1, 5, 20}) {
    std::vector<float> x = testing::make_activations(m, cols, cols, 12);
    const int64_t bad = m / 2;
    x[size_t(bad * cols + 37)] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> y(size_t(m * 40));
    detail::matmul_with(isa(), GemmPrecision::kBf16Activations, pool(2), view, x.data(), m, cols, y.data(), 40);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < 40; ++r) {
        const float v = y[size_t(i * 40 + r)];
        if (i == bad) {
          ASSERT_TRUE(std::isnan(v)) << "m=" << m << " r=" << r;
        } else {
          ASSERT_TRUE(std::isfinite(v)) << "m=" << m << " i=" << i << " r=" << r;
        }
      }
  }
}

// matmul_group: several weights over the same activations as one job. Every y is bitwise what a
// separate matmul writes, on every ISA and type, packed (int8 decode) or not, with weights whose
// row counts cut the threads' chunks mid-weight, padded y strides left alone, and prefill (one
// after another) and a mixed packed/plain group (no shared job) too; views with fp16 activations
// (half 1) round them once for the group as each matmul would.
TEST(MatmulGroup, EveryTargetBitwiseAsItsOwnMatmul) {
  const int64_t cols = 96, ldx = cols + 3;
  const int64_t row_counts[] = {200, 17, 63};
  for (DType type : kTypes)
    for (MatmulIsa isa : kIsas) {
      if (!detail::isa_available(isa)) continue;
      std::vector<TestWeight> ws;
      std::vector<std::unique_ptr<PackedWeight>> packs;
      for (int64_t rows : row_counts) {
        ws.push_back(testing::make_weight(type, rows, cols, uint32_t(rows * 7 + int(type)), rows % 2 ? 4 : 0));
        packs.push_back(isa != MatmulIsa::kPortable && can_pack_for_decode(type) ? pack_for_decode(pool(2), ws.back().view())
                                                                               : nullptr);
      }
      const int halves = type == DType::F16 || type == DType::BF16 ? 2 : 1;
      for (int mix = 0; mix < (packs[0] ? 2 : 1); ++mix)
        for (int half = 0; half < halves; ++half)
          for (int64_t m : {1, 3, 8, 9}) {
            const std::vector<float> x = testing::make_activations(m, cols, ldx, uint32_t(m + 5));
            for (int threads : {1, 2, 3}) {
              SCOPED_TRACE(std::string(dtype_name(type)) + " " + detail::isa_name(isa) + " m=" + std::to_string(m) +
                           " threads=" + std::to_string(threads) + " mix=" + std::to_string(mix) +
                           " half=" + std::to_string(half));
              std::vector<MatmulTarget> targets;
              std::vector<std::vector<float>> got, want;
              for (size_t t = 0; t < ws.size(); ++t) {
                WeightView v = ws[t].view();
                // mix 1: the middle weight plain among packed ones.
                if (packs[t] && !(mix == 1 && t == 1)) v.packed = packs[t].get();
                v.half_activations = half == 1;
                const int64_t ldy = v.rows + 3;
                got.emplace_back(size_t(m * ldy), kSentinel);
                want.emplace_back(size_t(m * ldy), kSentinel);
                detail::matmul_with(isa, GemmPrecision::kBf16Activations, pool(threads), v, x.data(), m, ldx,
                                    want.back().data(), ldy);
                targets.push_back({v, got.back().data(), ldy});
              }
              detail::matmul_group_with(isa, GemmPrecision::kBf16Activations, pool(threads), targets, x.data(), m, ldx);
              for (size_t t = 0; t < ws.size(); ++t)
                ASSERT_EQ(std::memcmp(got[t].data(), want[t].data(), got[t].size() * 4), 0) << "target " << t;
            }
          }
    }
}

// weighted_row_sum: y += P W over W's rows (attention's values), every ISA and type, with tiles
// of 64 rows crossed, plain-type tails, output rows in and past one register block, and y's
// padding and p's unused columns left alone / never read.
TEST_P(MatmulTest, WeightedRowSumMatchesReference) {
  std::vector<int64_t> col_list = {32, 64, 256};
  if (type() == DType::F32 || type() == DType::F16 || type() == DType::BF16) col_list.push_back(80);
  for (int64_t cols : col_list)
    for (int64_t rows : {1, 63, 130})
      for (int64_t m : {1, 3, 8, 11}) {
        SCOPED_TRACE("m=" + std::to_string(m) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
        const TestWeight w = testing::make_weight(type(), rows, cols, uint32_t(rows * 31 + cols), 6);
        const int64_t ldp = rows + 2, ldy = cols + 3;
        // p's two columns past `rows` are NaN: a kernel reading them poisons y.
        std::vector<float> p = testing::make_activations(m, rows, ldp, uint32_t(m * 7 + rows));
        std::vector<float> y(size_t(m * ldy), kSentinel);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t c = 0; c < cols; ++c) y[size_t(i * ldy + c)] = float(i + 1) * 0.25f;  // accumulated onto
        detail::weighted_row_sum_with(isa(), w.view(), p.data(), m, ldp, y.data(), ldy);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t c = 0; c < ldy; ++c) {
            const float got = y[size_t(i * ldy + c)];
            if (c >= cols) {
              ASSERT_EQ(std::memcmp(&got, &kSentinel, 4), 0) << "wrote padding y[" << i << "," << c << "]";
              continue;
            }
            double want = double(i + 1) * 0.25, scale = 0.25;
            for (int64_t r = 0; r < rows; ++r) {
              want += double(p[size_t(i * ldp + r)]) * w.values[size_t(r * cols + c)];
              scale += std::fabs(double(p[size_t(i * ldp + r)]) * w.values[size_t(r * cols + c)]);
            }
            ASSERT_LE(std::fabs(double(got) - want), 1e-5 * scale) << "y[" << i << "," << c << "] = " << got;
          }
      }
}

// The family alone ("neon", not isa_name's "neon+dotprod"): test names must be letters and digits.
const char* isa_family(MatmulIsa isa) {
  switch (isa) {
    case MatmulIsa::kAvx512: return "avx512";
    case MatmulIsa::kAvx2: return "avx2";
    case MatmulIsa::kNeon: return "neon";
    case MatmulIsa::kPortable: break;
  }
  return "portable";
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<DType, MatmulIsa>>& info) {
  return std::string(dtype_name(std::get<0>(info.param))) + "_" + isa_family(std::get<1>(info.param));
}

constexpr DType kPackedTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                                  DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};
// aarch64's one family takes SDOT where the core has it, plain NEON products elsewhere
// (TANDEM_CPU_ISA=neon, or qemu's -cpu cortex-a53, tests the latter).
#if defined(__aarch64__)
constexpr MatmulIsa kInt8Isas[] = {MatmulIsa::kNeon};
#else
constexpr MatmulIsa kInt8Isas[] = {MatmulIsa::kAvx2, MatmulIsa::kAvx512};
#endif
INSTANTIATE_TEST_SUITE_P(QuantizedTypes, PackedDecode,
                         ::testing::Combine(::testing::ValuesIn(kPackedTypes), ::testing::ValuesIn(kInt8Isas)), param_name);

INSTANTIATE_TEST_SUITE_P(AllIsas, DequantizedTypes,
                         ::testing::Combine(::testing::ValuesIn(kDequantizedTypes), ::testing::ValuesIn(kIsas)), param_name);
INSTANTIATE_TEST_SUITE_P(AllTypesAllIsas, MatmulTest,
                         ::testing::Combine(::testing::ValuesIn(kTypes), ::testing::ValuesIn(kIsas)), param_name);

TEST(MatmulApi, PicksTheBestIsaOfThisCpu) {
  const std::string isa = matmul_isa();
  if (detail::isa_available(MatmulIsa::kAvx512)) {
    EXPECT_EQ(isa, "avx512");
  } else if (detail::isa_available(MatmulIsa::kAvx2)) {
    EXPECT_EQ(isa, "avx2");
  } else if (detail::isa_available(MatmulIsa::kNeon)) {
    // The int8 extensions the CPU (or TANDEM_CPU_ISA) leaves on are named after the family.
    const CpuFeatures& f = cpu_features();
    EXPECT_EQ(isa, f.dotprod && f.i8mm ? "neon+dotprod+i8mm" : f.dotprod ? "neon+dotprod" : "neon");
  } else {
    EXPECT_EQ(isa, "portable");
  }
}

TEST(MatmulApi, PrecisionCanBeForced) {
  const GemmPrecision before = gemm_precision();
  set_gemm_precision(GemmPrecision::kFp32);
  EXPECT_EQ(gemm_precision(), GemmPrecision::kFp32);
  // With fp32 forced, the public entry point is fp32-accurate even for a long prompt.
  const TestWeight w = testing::make_weight(DType::Q4_0, 70, 256, 3);
  const std::vector<float> x = testing::make_activations(40, 256, 256, 4);
  std::vector<float> y(40 * 70);
  matmul(pool(2), w.view(), x.data(), 40, 256, y.data(), 70);
  const auto ref = testing::reference_matmul(w, x.data(), 40, 256);
  const auto scale = testing::error_scale(w, x.data(), 40, 256);
  for (size_t j = 0; j < y.size(); ++j) ASSERT_LE(std::fabs(y[j] - ref[j]) / scale[j], 1e-5) << j;
  set_gemm_precision(GemmPrecision::kBf16Activations);
  EXPECT_EQ(gemm_precision(), GemmPrecision::kBf16Activations);
  set_gemm_precision(before);
}

// kFastest runs the bf16 GEMM exactly where the measured rate of this core's bf16 kernel for the
// type (AMX tiles or vdpbf16ps) beats its fp32 FMA rate, and the fp32 GEMM elsewhere: bitwise the
// result of the path it names.
TEST(MatmulApi, FastestPrefillFollowsTheMeasuredRates) {
  if (!detail::isa_available(MatmulIsa::kAvx512) || !detail::bf16_gemm_available())
    GTEST_SKIP() << "no AVX512-BF16: the bf16 GEMM does not exist here";
  const DotRates& rates = prefill_dot_rates();
  // One core's rates lie between a slow laptop's and a many-port server's.
  EXPECT_GT(rates.fp32_fma_macs, 1e9);
  EXPECT_LT(rates.fp32_fma_macs, 1e12);
  EXPECT_GT(rates.bf16_dot_macs, 1e9);
  EXPECT_LT(rates.bf16_dot_macs, 1e12);
  if (detail::amx_bf16_usable()) {
    // 16 x 16 x 32 MACs per tdpbf16ps: at least one per 64 cycles of a 1 GHz core, at most one a
    // cycle of a 5 GHz one.
    EXPECT_GT(rates.amx_bf16_macs, 1.2e11);
    EXPECT_LT(rates.amx_bf16_macs, 4.1e13);
  } else {
    EXPECT_EQ(rates.amx_bf16_macs, 0.0);
  }
  if (cpu_features().avx512vnni) {  // 64 MACs per vpdpbusd, as the FMA's bounds with 4x the MACs
    EXPECT_GT(rates.int8_dot_macs, 4e9);
    EXPECT_LT(rates.int8_dot_macs, 4e12);
  } else {
    EXPECT_EQ(rates.int8_dot_macs, 0.0);
  }
  for (DType t : {DType::F16, DType::BF16}) {
    const double bf16_rate = detail::amx_gemm_runs(t) ? rates.amx_bf16_macs : rates.bf16_dot_macs;
    EXPECT_EQ(bf16_gemm_preferred(t), bf16_rate > 1.25 * rates.fp32_fma_macs) << dtype_name(t);
    const TestWeight w = testing::make_weight(t, 64, 512, 21);
    const std::vector<float> x = testing::make_activations(32, 512, 512, 22);
    auto run = [&](GemmPrecision p) {
      std::vector<float> y(32 * 64);
      detail::matmul_with(MatmulIsa::kAvx512, p, pool(2), w.view(), x.data(), 32, 512, y.data(), 64);
      return y;
    };
    const std::vector<float> fastest = run(GemmPrecision::kFastest), bf16 = run(GemmPrecision::kBf16Activations),
                             fp32 = run(GemmPrecision::kFp32);
    ASSERT_NE(bf16, fp32) << "the two paths must differ for this check to mean anything";
    EXPECT_EQ(fastest, bf16_gemm_preferred(t) ? bf16 : fp32) << dtype_name(t);
  }
}

#if defined(__x86_64__)  // the bf16 GEMMs exist (and link) only in x86-64 builds
// The failures (the first five reported) of a bf16 GEMM's m x n result y (stride ldy) against the
// fp64 reference: an error over 1e-2 of sum |x|.|w|, or a write to the padding past n.
int bf16_bound_failures(const std::vector<float>& y, int64_t m, int64_t n, int64_t ldy, const std::vector<double>& ref,
                        const std::vector<double>& scale) {
  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t r = 0; r < ldy; ++r) {
      const float got = y[size_t(i * ldy + r)];
      if (r >= n) {
        if (std::memcmp(&got, &kSentinel, 4) != 0 && ++failures <= 5)
          ADD_FAILURE() << "wrote padding y[" << i << "," << r << "]";
        continue;
      }
      const double want = ref[size_t(i * n + r)], s = scale[size_t(i * n + r)] + 1e-30;
      if (!(std::fabs(double(got) - want) / s <= 1e-2) && ++failures <= 5)
        ADD_FAILURE() << "y[" << i << "," << r << "] = " << got << ", want " << want;
    }
  }
  return failures;
}

// Each bf16 GEMM this CPU has for 16-bit weights -- the AVX-512 one and, where AMX runs, the tile
// one (which matmul takes instead, so only this test still runs the other there) -- stays within
// the bf16 bound of the fp64 reference across the tails of every blocking (activation rows past a
// 16-row tile, weight rows past a 32-row panel, columns past a 32-column tile row and a 512-column
// k block), and writes nothing past y's rows.
TEST(MatmulApi, EveryBf16GemmOf16BitWeightsMatchesTheReference) {
  if (!detail::isa_available(MatmulIsa::kAvx512) || !detail::bf16_gemm_available())
    GTEST_SKIP() << "no AVX512-BF16: the bf16 GEMM does not exist here";
  for (DType t : {DType::F16, DType::BF16}) {
    std::vector<std::pair<std::string, const detail::GemmKernels*>> gemms = {{"avx512", detail::avx512_bf16_gemm(t)}};
    if (detail::amx_bf16_usable()) gemms.emplace_back("amx", detail::amx_bf16_gemm(t));
    for (const auto& [name, gemm] : gemms) ASSERT_NE(gemm, nullptr) << name << " " << dtype_name(t);
    for (int64_t cols : {40, 1100}) {
      for (int64_t rows : {17, 70}) {
        const TestWeight w = testing::make_weight(t, rows, cols, uint32_t(rows * 131 + cols));
        for (int64_t m : {5, 16, 45}) {
          const int64_t ldx = cols + 3, ldy = rows + 5;
          const std::vector<float> x = testing::make_activations(m, cols, ldx, uint32_t(m * 17 + cols));
          const std::vector<double> ref = testing::reference_matmul(w, x.data(), m, ldx);
          const std::vector<double> scale = testing::error_scale(w, x.data(), m, ldx);
          for (const auto& [name, gemm] : gemms) {
            for (int threads : {1, 2}) {
              SCOPED_TRACE(name + " " + std::string(dtype_name(t)) + " m=" + std::to_string(m) +
                           " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                           " threads=" + std::to_string(threads));
              std::vector<float> y(size_t(m * ldy), kSentinel);
              detail::run_gemm(pool(threads), detail::MatmulArgs{w.view(), x.data(), m, ldx, y.data(), ldy}, *gemm);
              if (bf16_bound_failures(y, m, rows, ldy, ref, scale)) return;
            }
          }
        }
      }
    }
  }
}

// The AMX GEMM of packed weights (every packed type), which kFastest takes for their prompts
// where packed_prefill_on_amx(): within the bf16 bound of the fp64 reference across the tails of
// its blocking (weight rows past a 16-row group and a 32-row panel, views that start at the second
// group, columns past a 512-column k block, activation rows past a 16-row tile), writing nothing
// past y's rows; and through matmul, bitwise the path the rates name.
TEST(MatmulApi, AmxGemmOfPackedWeightsMatchesTheReference) {
  if (!detail::amx_bf16_usable()) GTEST_SKIP() << "no usable AMX-BF16 here";
  for (DType t : kPackedTypes) {
    const detail::GemmKernels* gemm = detail::amx_bf16_packed_gemm(t);
    ASSERT_NE(gemm, nullptr) << dtype_name(t);
    // One k block and a tail past the 512-column k block, in the type's whole blocks.
    const int64_t block = dtype_traits(t).block_size;
    for (int64_t cols : {std::max(int64_t(96), block), block == 32 ? int64_t(1056) : int64_t(1280)}) {
      for (int64_t rows : {int64_t(17), int64_t(70)}) {
        const TestWeight w = testing::make_weight(t, rows, cols, uint32_t(rows * 131 + cols), 2);
        const auto packed = pack_for_decode(pool(2), w.view());
        ASSERT_TRUE(packed);
        for (int64_t first : {int64_t(0), int64_t(16)}) {
          const int64_t n = rows - first;
          TestWeight slice = w;  // rows [first, rows), as the device's row-range view sees them
          slice.rows = n;
          slice.bytes.erase(slice.bytes.begin(), slice.bytes.begin() + ptrdiff_t(size_t(first) * w.row_stride));
          slice.values.erase(slice.values.begin(), slice.values.begin() + ptrdiff_t(first * cols));
          WeightView view = slice.view();
          view.packed = packed.get();
          view.packed_row0 = first;
          for (int64_t m : {int64_t(16), int64_t(45)}) {
            const int64_t ldx = cols + 3, ldy = n + 5;
            const std::vector<float> x = testing::make_activations(m, cols, ldx, uint32_t(m * 17 + cols));
            const std::vector<double> ref = testing::reference_matmul(slice, x.data(), m, ldx);
            const std::vector<double> scale = testing::error_scale(slice, x.data(), m, ldx);
            for (int threads : {1, 2}) {
              SCOPED_TRACE(std::string(dtype_name(t)) + " m=" + std::to_string(m) + " rows=" + std::to_string(rows) +
                           " first=" + std::to_string(first) + " cols=" + std::to_string(cols) +
                           " threads=" + std::to_string(threads));
              std::vector<float> y(size_t(m * ldy), kSentinel);
              detail::run_gemm(pool(threads), detail::MatmulArgs{view, x.data(), m, ldx, y.data(), ldy}, *gemm);
              if (bf16_bound_failures(y, m, n, ldy, ref, scale)) return;
              // The public dispatch under kFastest: this GEMM where the rates say so, else the
              // packed int8 GEMM (what kBf16Activations runs for packed weights).
              std::vector<float> fastest(size_t(m * ldy), kSentinel), int8(size_t(m * ldy), kSentinel);
              detail::matmul_with(MatmulIsa::kAvx512, GemmPrecision::kFastest, pool(threads), view, x.data(), m, ldx,
                                  fastest.data(), ldy);
              detail::matmul_with(MatmulIsa::kAvx512, GemmPrecision::kBf16Activations, pool(threads), view, x.data(),
                                  m, ldx, int8.data(), ldy);
              ASSERT_NE(y, int8) << "the two paths must differ for this check to mean anything";
              ASSERT_EQ(fastest, packed_prefill_on_amx(t) ? y : int8);
            }
          }
        }
      }
    }
  }
}

// prefill_arithmetic(t), which the cpu device's caps and `bench --json` print, names the path a
// long prompt's matmul takes for t: bitwise that path's result, at the default precisions and with
// the GEMM forced to fp32.
TEST(MatmulApi, PrefillArithmeticNamesThePathMatmulTakes) {
  const GemmPrecision before = gemm_precision();
  for (GemmPrecision p : {GemmPrecision::kFastest, GemmPrecision::kFp32}) {
    set_gemm_precision(p);
    for (DType t : {DType::F16, DType::BF16, DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
      const TestWeight w = testing::make_weight(t, 64, 512, 31);
      const auto packed = decode_precision() == DecodePrecision::kInt8Activations ? pack_for_decode(pool(2), w.view())
                                                                                  : nullptr;
      WeightView view = w.view();
      view.packed = packed.get();  // what the cpu device attaches (null where it does not pack t)
      const int64_t m = 32;
      const std::vector<float> x = testing::make_activations(m, 512, 512, 32);
      std::vector<float> got(size_t(m * 64)), want(size_t(m * 64));
      matmul(pool(2), view, x.data(), m, 512, got.data(), 64);
      const std::string named = prefill_arithmetic(t);
      const detail::MatmulArgs args{view, x.data(), m, 512, want.data(), 64};
      if (named == "amx-bf16") {
        ASSERT_TRUE(detail::amx_bf16_usable());
        detail::run_gemm(pool(2), args, packed ? *detail::amx_bf16_packed_gemm(t) : *detail::amx_bf16_gemm(t));
      } else if (named == "bf16") {
        ASSERT_NE(detail::avx512_bf16_gemm(t), nullptr);
        detail::run_gemm(pool(2), args, *detail::avx512_bf16_gemm(t));
      } else if (named == "int8") {
        ASSERT_TRUE(packed);
        detail::run_packed_gemm(pool(2), args, detail::packed_kernels(detail::best_isa()));
      } else {
        ASSERT_EQ(named, "fp32");
        detail::matmul_with(detail::best_isa(), GemmPrecision::kFp32, pool(2), view, x.data(), m, 512, want.data(),
                            64);
      }
      EXPECT_EQ(got, want) << dtype_name(t) << " named " << named;
    }
  }
  set_gemm_precision(before);
}
#endif

TEST(MatmulApi, DequantizeRowMatchesReference) {
  for (DType t : kTypes) {
    const TestWeight w = testing::make_weight(t, 3, 96, 9, 4);
    std::vector<float> row(96);
    for (int64_t r = 0; r < 3; ++r) {
      dequantize_row(w.view(), r, row.data());
      for (int64_t k = 0; k < 96; ++k) ASSERT_EQ(double(row[size_t(k)]), w.values[size_t(r * 96 + k)]) << dtype_name(t);
    }
  }
}

}  // namespace
}  // namespace tandem::cpu
