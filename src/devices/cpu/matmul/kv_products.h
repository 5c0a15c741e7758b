// Attention's two products over one KV head of a typed cache, on the calling thread: the scores
// of queries against the keys and the probability-weighted sum of the values.
//
// Over an f16 cache, on a CPU with fp16 vector arithmetic (ARMv8.2-A FEAT_FP16: the "fp16" hwcap,
// asimdhp) and outside the fp32 oracle (TANDEM_MATMUL_PRECISION=fp32), both multiply in fp16:
// eight lanes per instruction and no widening of the cached values, against four fp32 lanes after
// a conversion. Each query row (probability row) is first scaled by a power of two so its largest
// |value| lies in [0.5, 1) -- exact, undone at the end -- so a product cannot exceed the cached
// value's magnitude. Sums stay in fp16 for at most 8 products per lane (keys: 64 columns; values:
// 8 rows), then go into fp32 accumulators: the error is about 2^-11 (fp16 rounding) of the
// summed |products| of each short run, against fp32's 2^-24 -- the arithmetic llama.cpp's ARM
// builds use for an f16 cache, with shorter fp16 runs. A run whose fp16 sum overflows (cached
// values above ~8000) is redone in fp32, so the result is never inf where fp32's is finite.
// Scores take fp16 for up to kKvFp16MaxQueryRows query rows (decode: one token's query heads
// sharing the KV head); more rows (prefill) go to the fp32 GEMM, which reuses each loaded key
// across a register tile of queries. Elsewhere (other types, other CPUs, the oracle) both are the
// matmul kernels in fp32 -- except on x86 with AVX-512, where decode (a few query rows) over an f16
// or q8_0 cache takes kernels made for it (kv_decode_avx512.cpp, kv_wide_kernels): still fp32
// arithmetic on exactly widened values, in 16-row blocks, with one transposing reduction per 16
// scores instead of one per score.
#pragma once

#include <cstdint>

#include "devices/cpu/matmul/matmul.h"

namespace tandem::cpu {

// y[i, r] = sum_c q[i, c] * K[r, c] for i < m, r < keys.rows (matmul with the keys as the weight).
void key_scores(ThreadPool& pool, const WeightView& keys, const float* q, int64_t m, int64_t ldq, float* y,
                int64_t ldy);

// y[i, c] += sum_r p[i, r] * V[r, c] for i < m, c < values.cols (weighted_row_sum): one thread.
void value_sums(const WeightView& values, const float* p, int64_t m, int64_t ldp, float* y, int64_t ldy);

// "fp16" where key_scores / value_sums take fp16 arithmetic for an f16 cache on this CPU, else "fp32".
const char* kv_f16_arithmetic();

namespace detail {

// One call of an fp16 kernel: rows x cols fp16 cache entries (row_stride elements apart) and m rows
// of fp32 operands a (queries or probabilities, stride lda), each multiplied by scale[i] (a power
// of two) before rounding to fp16; results (divided by scale[i]) in y, stride ldy.
struct KvFp16Args {
  const uint16_t* kv;
  int64_t rows, cols, row_stride;
  const float* a;
  int64_t m, lda;
  const float* scale;
  float* y;
  int64_t ldy;
};
// Most query rows key_scores hands to the fp16 kernel.
constexpr int64_t kKvFp16MaxQueryRows = 16;
// Largest head for the fp16 scores kernel (its rounded queries live on the stack).
constexpr int64_t kKvFp16MaxCols = 512;
struct KvFp16Kernels {
  void (*scores)(const KvFp16Args& a);  // y[i, r] = q_i . K_r (cols % 8 == 0, cols <= kKvFp16MaxCols)
  void (*sums)(const KvFp16Args& a);    // y[i, c] += sum_r p[i, r] V[r, c] (cols % 8 == 0)
};
// The fp16 kernels where this CPU runs them (aarch64 with asimdhp), else null.
const KvFp16Kernels* kv_fp16_kernels();
// Decode kernels in fp32 arithmetic over an f16 or q8_0 cache, each cached value widened exactly:
// where the AVX-512 kernels run (best_isa() is avx512), else null. Both take up to
// kKvWideMaxQueryRows operand rows and heads of cols % 16 == 0 (q8_0: % 32), cols <=
// kKvWideMaxCols. The fp32 path elsewhere (other shapes, types, CPUs) is the matmul kernels.
struct KvWideArgs {
  DType type;          // F16 or Q8_0
  const uint8_t* kv;   // the head's row 0
  int64_t rows, cols;  // cache rows (positions) x head width
  int64_t row_bytes;   // from one row to the next
  const float* a;      // m operand rows (queries or probabilities), stride lda
  int64_t m, lda;
  float* y;  // results, stride ldy: scores y[i, r] = a_i . K_r; sums y[i, c] += sum_r a[i, r] V[r, c]
  int64_t ldy;
};
struct KvWideKernels {
  void (*scores)(const KvWideArgs& a);
  void (*sums)(const KvWideArgs& a);
};
const KvWideKernels* kv_wide_kernels();
constexpr int64_t kKvWideMaxQueryRows = 16;
constexpr int64_t kKvWideMaxCols = 256;
bool kv_wide_applies(const WeightView& w, int64_t m);
// key_scores / value_sums on an explicit arithmetic (tests): fp16 needs kv_fp16_kernels(); fp32
// takes the wide kernels where kv_wide_applies, else the matmul kernels.
void key_scores_with(bool fp16, ThreadPool& pool, const WeightView& keys, const float* q, int64_t m, int64_t ldq,
                     float* y, int64_t ldy);
void value_sums_with(bool fp16, const WeightView& values, const float* p, int64_t m, int64_t ldp, float* y,
                     int64_t ldy);

}  // namespace detail
}  // namespace tandem::cpu
