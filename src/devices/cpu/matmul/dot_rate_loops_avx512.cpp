// The instruction loops that dot_rates.cpp times: fp32 FMAs and bf16 dot products, each into 12
// independent accumulators (more than latency x ports on any AVX-512 core), so their time is the
// instruction's throughput. No timing here: this file is compiled with AVX-512 flags and so uses
// no std:: templates (see matmul_internal.h).
#include "devices/cpu/matmul/kernels_avx512.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {
namespace {
constexpr int kAccumulators = 12;
}  // namespace

__attribute__((noinline)) float avx512_fp32_fma_loop(long iterations) {
  __m512 a = _mm512_set1_ps(1e-9f);
  const __m512 b = _mm512_set1_ps(1e-9f);
  __m512 c[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) c[i] = _mm512_set1_ps(float(i));
  for (long k = 0; k < iterations; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i) c[i] = _mm512_fmadd_ps(a, b, c[i]);
    __asm__ volatile("" : "+v"(a));  // keeps the loop from being folded
  }
  __m512 s = c[0];
  for (int i = 1; i < kAccumulators; ++i) s = _mm512_add_ps(s, c[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((noinline)) float avx512_bf16_dot_loop(long iterations) {
  __m512i a = _mm512_set1_epi32(0x3f803f80);        // bf16 pairs of 1.0
  const __m512i b = _mm512_set1_epi32(0x30003000);  // and of 2^-31: tiny sums, no overflow
  __m512 c[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) c[i] = _mm512_set1_ps(float(i));
  for (long k = 0; k < iterations; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i) c[i] = _mm512_dpbf16_ps(c[i], (__m512bh)a, (__m512bh)b);
    __asm__ volatile("" : "+v"(a));
  }
  __m512 s = c[0];
  for (int i = 1; i < kAccumulators; ++i) s = _mm512_add_ps(s, c[i]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace tandem::cpu::detail
