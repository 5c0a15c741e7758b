// Attention's products over a typed cache (kv_products.h): picks the fp16 kernels or the matmul
// kernels, and scales each operand row into fp16's comfortable range first.
#include "devices/cpu/matmul/kv_products.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu {
namespace detail {

#if defined(__aarch64__)
extern const KvFp16Kernels kNeonFp16Kv;
#else
extern const KvWideKernels kAvx512WideKv;
#endif

const KvFp16Kernels* kv_fp16_kernels() {
#if defined(__aarch64__)
  if (cpu_features().fp16_arith) return &kNeonFp16Kv;
#endif
  return nullptr;
}

const KvWideKernels* kv_wide_kernels() {
#if !defined(__aarch64__)
  if (best_isa() == MatmulIsa::kAvx512) return &kAvx512WideKv;
#endif
  return nullptr;
}

bool kv_wide_applies(const WeightView& w, int64_t m) {
  const int64_t width = w.type == DType::F16 ? 16 : w.type == DType::Q8_0 ? 32 : 0;
  return width && w.cols % width == 0 && w.cols <= kKvWideMaxCols && m <= kKvWideMaxQueryRows && kv_wide_kernels();
}

namespace {

KvWideArgs wide_args(const WeightView& w, const float* a, int64_t m, int64_t lda, float* y, int64_t ldy) {
  return KvWideArgs{w.type, static_cast<const uint8_t*>(w.data), w.rows, w.cols, int64_t(w.row_bytes), a, m, lda, y,
                    ldy};
}

bool fp16_applies(const WeightView& w) {
  return w.type == DType::F16 && w.cols % 8 == 0 && kv_fp16_kernels() && gemm_precision() != GemmPrecision::kFp32;
}

// Per row of a (m rows, n values, stride lda): the power of two taking its largest |value| into
// [0.5, 1), or 1 for a row of zeros. False when a value is inf or NaN (fp32 then computes the row
// as it would anyway).
bool row_scales(const float* a, int64_t m, int64_t n, int64_t lda, std::vector<float>& scales) {
  scales.resize(size_t(m));
  for (int64_t i = 0; i < m; ++i) {
    float mx = 0;
    for (int64_t c = 0; c < n; ++c) mx = std::max(mx, std::fabs(a[i * lda + c]));
    if (!std::isfinite(mx)) return false;
    int e = 0;
    if (mx > 0) std::frexp(mx, &e);
    scales[size_t(i)] = std::ldexp(1.0f, -std::clamp(e, -100, 100));
  }
  return true;
}

KvFp16Args fp16_args(const WeightView& w, const float* a, int64_t m, int64_t lda, const std::vector<float>& scales,
                     float* y, int64_t ldy) {
  return KvFp16Args{
      static_cast<const uint16_t*>(w.data), w.rows, w.cols, int64_t(w.row_bytes / 2), a, m, lda, scales.data(), y, ldy};
}

}  // namespace

void key_scores_with(bool fp16, ThreadPool& pool, const WeightView& keys, const float* q, int64_t m, int64_t ldq,
                     float* y, int64_t ldy) {
  thread_local std::vector<float> scales;
  if (fp16 && keys.cols <= kKvFp16MaxCols && m <= kKvFp16MaxQueryRows && row_scales(q, m, keys.cols, ldq, scales)) {
    kv_fp16_kernels()->scores(fp16_args(keys, q, m, ldq, scales, y, ldy));
    return;
  }
  if (!fp16 && kv_wide_applies(keys, m)) {
    kv_wide_kernels()->scores(wide_args(keys, q, m, ldq, y, ldy));
    return;
  }
  matmul(pool, keys, q, m, ldq, y, ldy);
}

void value_sums_with(bool fp16, const WeightView& values, const float* p, int64_t m, int64_t ldp, float* y,
                     int64_t ldy) {
  thread_local std::vector<float> scales;
  if (fp16 && row_scales(p, m, values.rows, ldp, scales)) {
    kv_fp16_kernels()->sums(fp16_args(values, p, m, ldp, scales, y, ldy));
    return;
  }
  if (!fp16 && kv_wide_applies(values, m)) {
    kv_wide_kernels()->sums(wide_args(values, p, m, ldp, y, ldy));
    return;
  }
  weighted_row_sum(values, p, m, ldp, y, ldy);
}

}  // namespace detail

void key_scores(ThreadPool& pool, const WeightView& keys, const float* q, int64_t m, int64_t ldq, float* y,
                int64_t ldy) {
  detail::key_scores_with(detail::fp16_applies(keys), pool, keys, q, m, ldq, y, ldy);
}

void value_sums(const WeightView& values, const float* p, int64_t m, int64_t ldp, float* y, int64_t ldy) {
  detail::value_sums_with(detail::fp16_applies(values), values, p, m, ldp, y, ldy);
}

const char* kv_f16_arithmetic() {
  return detail::fp16_applies(WeightView{DType::F16, nullptr, 0, 8, 16}) ? "fp16" : "fp32";
}

}  // namespace tandem::cpu
