// Matrix multiplication against a weight stored in any GGUF type: the CPU device's hot loop.
//
// The weight stays in its stored type (Q4_0 / Q8_0 blocks, f16, bf16, f32). In the oracle
// arithmetic (TANDEM_MATMUL_PRECISION=fp32) kernels dequantize into fp32 registers (or a small
// per-thread panel reused across many activation rows in prefill) and multiply fp32 activations
// with fp32 accumulation: the only error against the fp64 reference is fp32 rounding. The fast
// defaults round activations (bf16 prefill, int8 for Q4_0 / Q8_0 on VNNI CPUs): see the
// precisions below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"

namespace tandem {
class ThreadPool;
}

namespace tandem::cpu {

struct PackedWeight;

// A weight matrix of `rows` output channels by `cols` inputs, row-major in `type`
// (GGUF layout: dims[0] = cols is contiguous). cols is a multiple of the type's block size.
struct WeightView {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;  // stride between rows
  // Optional: the same rows repacked for the int8 decode kernels (packed_weight.h), as rows
  // [packed_row0, packed_row0 + rows) of `packed`. Decode (m <= 8) on a CPU with AVX-512 VNNI then
  // quantizes the activations to int8 per 32-column block (as llama.cpp's Q8_0 activations) and
  // runs integer dot products; without it, or for prefill, `data` serves in fp32 arithmetic.
  // packed_row0 must be a multiple of 16 for the packed path to be taken.
  const PackedWeight* packed = nullptr;
  int64_t packed_row0 = 0;
  // Optional, for F16 / BF16 weights: the activations may be rounded to fp16 after scaling by a
  // power of two (relative error at most 2^-11 of each, the F16 weights' own rounding). AVX-512
  // decode then reads them as fp16: half the activation traffic next to the weight stream. Every
  // m that does not take the bf16 GEMM sees the same rounded values, so a sequence's results do
  // not depend on how many others share its batch. Elsewhere (other ISAs) it changes nothing.
  bool half_activations = false;
};

// y[i, r] = sum_k x[i, k] * W[r, k] for i < m, r < W.rows.
// x: m rows of W.cols floats, stride ldx; y: m rows, stride ldy (>= W.rows).
// m == 1 is decode (matrix-vector, memory bound); m > 1 is prefill (matrix-matrix, compute bound).
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t m, int64_t ldx, float* y,
            int64_t ldy);

// One weight of a matmul_group and where its products go: y (m rows, stride ldy >= w.rows).
struct MatmulTarget {
  WeightView w;
  float* y = nullptr;
  int64_t ldy = 0;
};

// matmul for each target over the same activations x (every target's w.cols the same). In decode
// (m <= kDecodeMaxRows) the targets' rows are shared out among the threads as one job: q, k and v
// (gate and up) cost one dispatch, one wait and one activation quantization instead of three, and
// a thread runs from one weight into the next instead of idling at a join. Every y is bitwise what
// a separate matmul call writes. Prefill, or targets whose kernels differ, run one after another.
void matmul_group(ThreadPool& pool, std::span<const MatmulTarget> targets, const float* x, int64_t m, int64_t ldx);

// y[i, c] += sum_r p[i, r] * W[r, c] for i < m, r < W.rows, c < W.cols: W's rows weighted by p
// and summed into y -- attention's probabilities times a token-major value cache, whose rows are
// the values (no transpose). One thread (the caller splits the work). p: m rows, stride ldp
// (>= W.rows); y: m rows, stride ldy (>= W.cols).
void weighted_row_sum(const WeightView& w, const float* p, int64_t m, int64_t ldp, float* y, int64_t ldy);

// Which implementation matmul dispatches to on this CPU ("avx512", "avx2", "neon", "neon+dotprod",
// "neon+dotprod+i8mm", "portable").
const char* matmul_isa();

// Arithmetic of the prefill GEMM (m >= kBf16MinRows) on CPUs with AVX512-BF16.
//   kFp32:            weights dequantized to fp32, fp32 FMAs (error: fp32 rounding only).
//   kBf16Activations: activations rounded to bf16 (8-bit mantissa), products summed in fp32 by
//                     vdpbf16ps (32 MACs per instruction against an FMA's 16). Q4_0/Q8_0 integer
//                     levels and bf16 weights are exact in bf16 (the fp16 block scale is applied
//                     in fp32 per 32-element block): relative error about 2^-9 of |x|.|w|. F16
//                     weights are rounded to bf16 too: about 2^-8 of |x|.|w|.
//                     Where the CPU has AMX-BF16 (Intel Sapphire Rapids and later), F16/BF16
//                     weights run the same arithmetic on the tile unit (tdpbf16ps).
//   kFastest:         the bf16 GEMM only where this core's bf16 kernel for the type outruns its
//                     fp32 FMAs (prefill_dot_rates(); AMD Zen 4 yes; Intel Emerald Rapids only
//                     on AMX tiles: there vdpbf16ps issues at a quarter of the FMA rate), else
//                     fp32. Packed int8 weights (DecodePrecision) run their int8 kernels under
//                     both reduced modes, except under kFastest where
//                     packed_prefill_on_amx() (AMX tiles, bf16).
// Decode (small m) and f32 weights always use fp32.
// The default is kFastest; TANDEM_MATMUL_PRECISION=fp32 forces kFp32 (the oracle), =bf16 forces
// kBf16Activations (to compare the two on one machine).
enum class GemmPrecision { kFp32, kBf16Activations, kFastest };
void set_gemm_precision(GemmPrecision p);
GemmPrecision gemm_precision();

// Multiply-accumulates per second on one core, measured once (in about a millisecond) the first
// time they are asked for: fp32 FMAs, bf16 dot products (0 where the CPU lacks AVX512-BF16), AMX
// bf16 tile products and int8 dot products (measured only where AVX512-BF16 is).
struct DotRates {
  double fp32_fma_macs = 0;
  double bf16_dot_macs = 0;
  double amx_bf16_macs = 0;  // tdpbf16ps on AMX tiles; 0 where the CPU (or the OS) has none
  double int8_dot_macs = 0;  // vpdpbusd (u8 x s8, 64 MACs a zmm); 0 where the CPU lacks VNNI
};
const DotRates& prefill_dot_rates();
// Whether kFastest takes the bf16 GEMM here for weights of type t: bf16 present and the rate of
// the bf16 kernels that run t (AMX tiles for F16/BF16 where usable, else vdpbf16ps) over 1.25x
// the fp32 FMA rate (below that the speed would not pay for the rounded activations).
bool bf16_gemm_preferred(DType t);
// Whether kFastest runs the prefill of packed weights of type t (WeightView::packed) on the AMX
// tiles: AMX usable, t a packed block type (Q4_0 ... Q8_0, the K-quants, IQ4: those the tile GEMM
// decodes), and the tile rate over 1.25x the int8 dot rate of the kernels it replaces. It then
// rounds activations and the dequantized weights to bf16 -- the F16 arithmetic of
// kBf16Activations below -- instead of quantizing activations to int8: at most 2^-8 of |x|.|w|
// against int8's 2^-8 of the activation block's largest |x| times |w|.
bool packed_prefill_on_amx(DType t);
// "amx-bf16", "bf16", "int8" or "fp32": what a prompt's GEMM (m >= kBf16MinRows) of weights of
// type t computes here at the current gemm_precision() and decode_precision(), with the packed
// copy the cpu device attaches where it packs t (can_pack_for_decode).
const char* prefill_arithmetic(DType t);

// Arithmetic of Q4_0 / Q8_0 matmuls on AVX-512 VNNI CPUs (decode, m <= 8, and prefill unless the
// GEMM precision is kFp32), and of F16 / BF16 ones on AVX-512 outside the bf16 GEMM:
//   kFp32:            weights decoded to fp32 next to fp32 FMAs (error: fp32 rounding only); the
//                     prefill GEMM then follows gemm_precision().
//   kInt8Activations: the device attaches packed weights (WeightView::packed) and activations are
//                     quantized to int8 per 32 columns with an fp32 scale (round to nearest):
//                     relative error about 2^-8 of each activation block's largest |x|, the
//                     arithmetic llama.cpp uses for these types. Prefill runs the decode kernels
//                     over tiles of 8 rows (vpdpbusd: twice the MACs of vdpbf16ps). F16 / BF16
//                     weights get WeightView::half_activations (activations rounded to fp16 after
//                     a power-of-two scale, error at most 2^-11 of |x|.|w|; llama.cpp rounds
//                     F16's to fp16 too, unscaled).
// The default is kInt8Activations unless TANDEM_MATMUL_PRECISION=fp32 (which forces fp32 for
// both decode and prefill: the oracle path). The name is historical: it governs prefill too.
enum class DecodePrecision { kFp32, kInt8Activations };
void set_decode_precision(DecodePrecision p);
DecodePrecision decode_precision();

// Largest m that matmul treats as decode (matrix-vector kernels; packed weights apply).
constexpr int64_t kDecodeMaxRows = 8;

// Smallest m for which the bf16 GEMM is used (below it the cost is weight-bandwidth bound and
// rounding activations would buy nothing).
constexpr int64_t kBf16MinRows = 16;

// One row of W dequantized to fp32 (embedding lookup uses this).
void dequantize_row(const WeightView& w, int64_t row, float* out);

}  // namespace tandem::cpu
