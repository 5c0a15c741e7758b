// The instruction loops that dot_rates.cpp times: fp32 FMAs, bf16 and int8 dot products, each into
// kDotRateAccumulators independent accumulators (more than latency x ports on any AVX-512 core), so
// their time is the instruction's throughput. No timing here: this file is compiled with AVX-512
// (and VNNI) flags and so uses no std:: templates (see matmul_internal.h). The int8 loop runs only
// where cpu_features() has VNNI; the others only where it has AVX512-BF16.
#include "devices/cpu/matmul/kernels_avx512.h"
#include "devices/cpu/matmul/simd_avx512.h"

namespace tandem::cpu::detail {
namespace {

// `iterations` x kDotRateAccumulators calls of step(acc, a) -> acc, one per accumulator; `a` passes
// through an empty asm each iteration so the compiler cannot fold the loop.
template <class A, class Step>
float accumulate_loop(long iterations, A a, Step step) {
  __m512 c[kDotRateAccumulators];
  for (int i = 0; i < kDotRateAccumulators; ++i) c[i] = _mm512_set1_ps(float(i));
  for (long k = 0; k < iterations; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kDotRateAccumulators; ++i) c[i] = step(c[i], a);
    __asm__ volatile("" : "+v"(a));
  }
  __m512 s = c[0];
  for (int i = 1; i < kDotRateAccumulators; ++i) s = _mm512_add_ps(s, c[i]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace

__attribute__((noinline)) float avx512_fp32_fma_loop(long iterations) {
  const __m512 b = _mm512_set1_ps(1e-9f);
  return accumulate_loop(iterations, _mm512_set1_ps(1e-9f),
                         [b](__m512 acc, __m512 a) { return _mm512_fmadd_ps(a, b, acc); });
}

__attribute__((noinline)) float avx512_bf16_dot_loop(long iterations) {
  const __m512i b = _mm512_set1_epi32(0x30003000);  // bf16 pairs of 2^-31: tiny sums, no overflow
  return accumulate_loop(iterations, _mm512_set1_epi32(0x3f803f80),  // bf16 pairs of 1.0
                         [b](__m512 acc, __m512i a) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); });
}

__attribute__((noinline)) float avx512_int8_dot_loop(long iterations) {
  const __m512i b = _mm512_set1_epi8(1);  // sums grow by 4 a lane per instruction: no overflow
  return accumulate_loop(iterations, _mm512_set1_epi8(1), [b](__m512 acc, __m512i a) {
    return _mm512_castsi512_ps(_mm512_dpbusd_epi32(_mm512_castps_si512(acc), a, b));
  });
}

}  // namespace tandem::cpu::detail
