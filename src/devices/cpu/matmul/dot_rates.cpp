// This core's multiply-accumulate rates with fp32 FMAs, bf16 and int8 dot products and AMX tiles,
// and the prefill GEMM choices made from them (GemmPrecision::kFastest).
//
// Why measure rather than assume: vdpbf16ps does 32 bf16 MACs per instruction against an fp32
// FMA's 16, yet how many issue per cycle differs by vendor. Measured (2026-12, 2 vCPUs, Intel Xeon
// family 6 model 207 / Emerald Rapids): vfmadd231ps zmm 5.4 G/s = 87 GMAC/s per core, vdpbf16ps
// zmm 1.3 G/s = 42 GMAC/s, and the bf16 GEMM ran F16/BF16 prompts at 55-58 tok/s against the fp32
// GEMM's 80-90. On AMD Zen 4 (the EPYC of earlier sessions) the bf16 GEMM was the faster one. So
// the prefill arithmetic follows what this core does, not its feature bits. The AMX tile product
// is timed as well: where it runs (F16/BF16 weights) it is the bf16 GEMM's rate.
#include <algorithm>
#include <chrono>

#include "core/cpu_features.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu {
namespace detail {

// 240k instructions per round: 50-200 us. Rounds alternate and the fastest of each is kept: the
// first wide instructions may run at a lower power licence, and another process may take the core
// for part of a round.
constexpr long kIterations = 20000;
constexpr int kRounds = 5;
constexpr double kInstructionsPerRound = double(kIterations) * kDotRateAccumulators;
// AMX: 4 tdpbf16ps of 16 x 16 x 32 MACs per iteration, 16+ cycles each: 12k instructions, ~70 us.
constexpr long kAmxIterations = 3000;
constexpr double kAmxMacsPerInstruction = 16 * 16 * 32;

#if defined(TANDEM_MATMUL_X86)
DotRates measure_avx512_dot_rates() {
  auto seconds = [](float (*loop)(long), long iterations) {
    volatile float sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    sink = loop(iterations);
    (void)sink;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double fp32 = 1e30, bf16 = 1e30;
  for (int round = 0; round < kRounds; ++round) {
    fp32 = std::min(fp32, seconds(avx512_fp32_fma_loop, kIterations));
    bf16 = std::min(bf16, seconds(avx512_bf16_dot_loop, kIterations));
  }
  DotRates rates{kInstructionsPerRound * 16 / fp32, kInstructionsPerRound * 32 / bf16};
  if (cpu_features().avx512vnni) {
    double int8 = 1e30;
    for (int round = 0; round < kRounds; ++round) int8 = std::min(int8, seconds(avx512_int8_dot_loop, kIterations));
    rates.int8_dot_macs = kInstructionsPerRound * 64 / int8;
  }
  if (amx_bf16_usable()) {
    double amx = 1e30;
    for (int round = 0; round < kRounds; ++round) amx = std::min(amx, seconds(amx_bf16_tile_loop, kAmxIterations));
    rates.amx_bf16_macs = kAmxIterations * 4 * kAmxMacsPerInstruction / amx;
  }
  return rates;
}
#else
DotRates measure_avx512_dot_rates() { return {}; }  // bf16_gemm_available() is false off x86-64
#endif

bool bf16_faster(const DotRates& r, bool amx) {
  return (amx ? r.amx_bf16_macs : r.bf16_dot_macs) > 1.25 * r.fp32_fma_macs;
}

}  // namespace detail

const DotRates& prefill_dot_rates() {
  static const DotRates rates = detail::bf16_gemm_available() ? detail::measure_avx512_dot_rates() : DotRates{};
  return rates;
}

bool bf16_gemm_preferred(DType t) {
  return detail::bf16_gemm_available() && detail::bf16_faster(prefill_dot_rates(), detail::amx_gemm_runs(t));
}

bool packed_prefill_on_amx(DType t) {
#if defined(TANDEM_MATMUL_X86)
  const DotRates& r = prefill_dot_rates();
  return detail::amx_bf16_usable() && detail::amx_bf16_packed_gemm(t) && r.amx_bf16_macs > 1.25 * r.int8_dot_macs;
#else
  (void)t;
  return false;
#endif
}

}  // namespace tandem::cpu
