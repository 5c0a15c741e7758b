// The AVX-512 VNNI decode path on packed weights (packed_weight.h): the int8 quantization of the
// activations, and the table of the kernels of every packed type (gemv_int8_blocks32_avx512.cpp,
// gemv_int8_superblocks_avx512.cpp) -- the path that lets decode run at memory speed rather than
// instruction speed.
#include "devices/cpu/matmul/int8_blocks_avx512.h"

namespace tandem::cpu::detail {
namespace {

// m rows of activations -> int8 per 32 columns. cols is a multiple of 32 (Q4_0 / Q8_0 rows).
// A block holding a NaN or infinity gets a NaN scale, so the rows it feeds come out NaN as the
// fp32 path's would.
void quantize_rows(const float* x, int64_t ldx, int64_t m, int64_t cols, int8_t* q, float* d, int32_t* sums,
                   int32_t* sums_lo) {
  const int64_t blocks = cols / 32;
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * ldx;
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512 v0 = _mm512_loadu_ps(xi + b * 32), v1 = _mm512_loadu_ps(xi + b * 32 + 16);
      const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
      // Checked on both halves before the max, which drops NaNs.
      const __m512 big = _mm512_set1_ps(3.4e38f);
      const bool finite = (_mm512_cmp_ps_mask(a0, big, _CMP_LE_OQ) & _mm512_cmp_ps_mask(a1, big, _CMP_LE_OQ)) == 0xffff;
      const float scale = amax / 127.0f;
      const __m512 inv = _mm512_set1_ps(scale > 0 && finite ? 127.0f / amax : 0.0f);
      // Rounds to nearest even (the default MXCSR mode); |q| <= 127 so the narrowing is exact.
      // A non-finite block's quants are zeroed (NaN * 0 would convert to INT_MIN, and its sum would
      // overflow); its NaN scale alone carries the poison to the output.
      const __m512i q0 = finite ? _mm512_cvtps_epi32(_mm512_mul_ps(v0, inv)) : _mm512_setzero_si512();
      const __m512i q1 = finite ? _mm512_cvtps_epi32(_mm512_mul_ps(v1, inv)) : _mm512_setzero_si512();
      int8_t* qb = q + i * cols + b * 32;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qb), _mm512_cvtepi32_epi8(q0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + 16), _mm512_cvtepi32_epi8(q1));
      sums[i * blocks + b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
      sums_lo[i * blocks + b] = _mm512_reduce_add_epi32(q0);
      d[i * blocks + b] = finite ? scale : __builtin_nanf("");
    }
  }
}

}  // namespace

extern const PackedDecodeKernels kAvx512VnniPacked;
const PackedDecodeKernels kAvx512VnniPacked = {
    quantize_rows,
    {{DType::Q4_0, int8::q4_0_gemv},
     {DType::Q8_0, int8::q8_0_gemv},
     {DType::Q4_1, int8::q4_1_gemv},
     {DType::Q5_0, int8::q5_0_gemv},
     {DType::Q5_1, int8::q5_1_gemv},
     {DType::IQ4_NL, int8::iq4_nl_gemv},
     {DType::Q2_K, int8::q2_k_gemv},
     {DType::Q3_K, int8::q3_k_gemv},
     {DType::Q4_K, int8::q4_k_gemv},
     {DType::Q5_K, int8::q5_k_gemv},
     {DType::Q6_K, int8::q6_k_gemv},
     {DType::IQ4_XS, int8::iq4_xs_gemv}}};

}  // namespace tandem::cpu::detail
