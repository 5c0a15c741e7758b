// Internals shared by the matmul translation units: the per-ISA kernel tables, the driver that
// splits work over threads, and a hook that runs an explicit ISA (tests and benchmarks).
//
// Why kernels are reached through function-pointer tables: each ISA lives in its own .cpp compiled
// with its own -m flags. Templates or inline functions instantiated in such a file can be merged
// by the linker with the same instantiation from a file compiled without those flags, and then an
// AVX-512 body could run on a CPU without AVX-512. So ISA files keep everything in anonymous
// namespaces, use no std:: templates, and export only the plain tables below; the driver (which
// uses std::, the thread pool and scratch buffers) is compiled with baseline flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/matmul/packed_weight.h"

namespace tandem::cpu::detail {

// The kernel families of each architecture; a build holds its own architecture's (x86-64 or
// aarch64) and the portable oracle, and isa_available() is false for the other's.
enum class MatmulIsa { kPortable, kAvx2, kAvx512, kNeon };
#if defined(__x86_64__)
#define TANDEM_MATMUL_X86 1
#elif defined(__aarch64__)
#define TANDEM_MATMUL_ARM64 1
#endif

const char* isa_name(MatmulIsa isa);
bool isa_available(MatmulIsa isa);  // the CPU (as cpu_features() reports it) can run it
bool bf16_gemm_available();         // AVX512-BF16 present (and the AVX-512 path usable)
// AMX-BF16 present, the bf16 GEMM available, and Linux has granted this process the tile state
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once, here: a tile instruction without it is SIGILL).
bool amx_bf16_usable();
// prefill_dot_rates() measured (dot_rates.cpp; only where bf16_gemm_available()), from loops of
// kDotRateAccumulators instructions per iteration, one into each accumulator
// (dot_rate_loops_avx512.cpp).
constexpr int kDotRateAccumulators = 12;
DotRates measure_avx512_dot_rates();
float avx512_fp32_fma_loop(long iterations);
float avx512_bf16_dot_loop(long iterations);
float avx512_int8_dot_loop(long iterations);  // vpdpbusd: only where cpu_features().avx512vnni
// `iterations` x 4 tdpbf16ps (16 x 16 x 32 MACs each) into four accumulator tiles; only where
// amx_bf16_usable().
float amx_bf16_tile_loop(long iterations);
// Whether kFastest's bf16 choice holds for these rates, for the AMX kernels (amx) or the AVX-512
// ones.
bool bf16_faster(const DotRates& r, bool amx);
MatmulIsa best_isa();

// Whether a prefill GEMM of t's weights at `precision` runs the bf16 kernels (where they exist for
// the type).
bool bf16_gemm_taken(GemmPrecision precision, DType t);
// ... and whether they can on `isa` here: the one condition matmul_with and prefill_arithmetic share.
bool bf16_gemm_applies(MatmulIsa isa, GemmPrecision precision, DType t);
// Whether a prompt of packed weights of type t (m >= kBf16MinRows) runs the AMX GEMM
// (amx_bf16_packed_gemm) on `isa` at `precision`, not the int8 kernels: likewise shared.
bool packed_gemm_on_amx(MatmulIsa isa, GemmPrecision precision, DType t);

// Decode: m <= kGemvMaxM activation rows stream the weight once (matrix-vector).
constexpr int64_t kGemvMaxM = kDecodeMaxRows;

struct MatmulArgs {
  WeightView w;
  const float* x;
  int64_t m;
  int64_t ldx;
  float* y;
  int64_t ldy;
};

// Computes y rows [0, m) for weight rows [r0, r1) (m <= kGemvMaxM).
using GemvFn = void (*)(const MatmulArgs& a, int64_t r0, int64_t r1);

// A register-blocked GEMM: MR activation rows x NR weight rows per microkernel call.
//
// Packed activations (shared by all threads, built once per call): MR-row blocks, each k-major
// ([k][MR] for fp32, [k/2][MR][2] for bf16 pairs), zero-padded to MR rows and to kpad columns.
// Either way the slice starting at column k0 begins at element k0 * MR of its block.
// Packed weight panel (per thread, per k block): NR-row sub-panels, k-major in the same sense,
// plus (for block-scaled bf16) one fp32 scale per 32 columns per row: scales[(k/32)*NR + r].
struct GemmKernels {
  int mr, nr;       // microkernel tile
  int kc, nc;       // cache blocking: columns per k block, weight rows per packed panel
  int k_align;      // kpad = cols rounded up to this (2 for bf16 pairs)
  int a_bytes;      // bytes per packed activation element (4 fp32, 2 bf16)
  int b_bytes;      // bytes per packed panel element
  bool scaled;      // panel carries per-32-column block scales
  // Packs `rows` (<= mr) rows of x, columns [0, k), into one block of mr x kpad elements.
  void (*pack_x)(const float* x, int64_t ldx, int rows, int64_t k, int64_t kpad, void* dst);
  // Packs weight rows [r0, r0 + rows) (rows <= nr; missing rows zero), columns [k0, k0 + kc)
  // (kc rounded up to k_align, columns past W.cols zero), into one sub-panel.
  void (*pack_panel)(const WeightView& w, int64_t r0, int rows, int64_t k0, int64_t kc, void* panel,
                     float* scales);
  // y[i, j] (+)= sum over the kc packed columns, for i < mr_valid, j < nr_valid; stores nothing
  // else. accumulate=false overwrites y.
  void (*micro)(int mr_valid, const void* a, const void* b, const float* scales, int64_t kc, float* y,
                int64_t ldy, int nr_valid, bool accumulate);
  // Called by each thread before its first micro() of a run_gemm and after its last (null: none).
  // The AMX kernels configure the tile registers here once instead of in every micro() call.
  void (*enter)() = nullptr;
  void (*leave)() = nullptr;
};

struct IsaKernels {
  GemvFn gemv[5];        // indexed by weight_type_index()
  GemmKernels gemm[5];   // fp32 GEMM
};

// Index of a weight type in the tables: F32, F16, BF16, Q8_0, Q4_0; -1 for every other block type
// (Q4_1 ... IQ4_XS), which takes the dequantizing path: decode dequantizes a few rows at a time
// into fp32 for the ISA's f32 kernel, prefill's panels are filled by dequantize_range.
int weight_type_index(DType t);
constexpr int kTypesWithKernels = 5;

// Row `row` of w, columns [k0, k0 + n), as fp32 through core/quant.h's dequantizer (k0 and n
// multiples of the type's block size; the GEMMs' kc of 256 is a multiple of every block size).
// Compiled with baseline flags: the ISA files call it for types they have no decoder of.
void dequantize_range(const WeightView& w, int64_t row, int64_t k0, int64_t n, float* out);

const IsaKernels& portable_kernels();
const IsaKernels& avx2_kernels();
const IsaKernels& avx512_kernels();
const IsaKernels& neon_kernels();
// The table of an available ISA (the portable one for kPortable).
const IsaKernels& kernels_of(MatmulIsa isa);
// bf16-activation GEMM for BF16, Q8_0, Q4_0 (exact in bf16) and F16 (rounded); null elsewhere.
const GemmKernels* avx512_bf16_gemm(DType t);
// The same arithmetic on AMX tiles, for BF16 and F16 weights; null elsewhere. Only where
// amx_bf16_usable().
const GemmKernels* amx_bf16_gemm(DType t);
// The AMX-BF16 GEMM of weights with a packed copy (WeightView::packed) of type t, which it reads;
// null for types it does not decode (any type pack_for_decode does not pack).
const GemmKernels* amx_bf16_packed_gemm(DType t);
// The bf16 GEMM matmul_with runs for t: AMX where usable and it has t, else AVX-512; null where
// neither has t.
const GemmKernels* bf16_gemm_for(DType t);
// Whether bf16_gemm_for(t) is the AMX one.
bool amx_gemm_runs(DType t);

// y[i, :] += sum_r p[i, r] * W[r, :] over all of W's rows (weighted_row_sum): one thread.
struct RowSumArgs {
  WeightView w;
  const float* p;
  int64_t m;
  int64_t ldp;
  float* y;
  int64_t ldy;
};
using RowSumFn = void (*)(const RowSumArgs& a);
void row_sum_portable(const RowSumArgs& a);
// Per-ISA tables, indexed by weight_type_index().
extern const RowSumFn kAvx512RowSum[5];
extern const RowSumFn kAvx2RowSum[5];
extern const RowSumFn kNeonRowSum[5];
// weighted_row_sum on an explicit path (tests); the ISA must be available.
void weighted_row_sum_with(MatmulIsa isa, const WeightView& w, const float* p, int64_t m, int64_t ldp, float* y,
                           int64_t ldy);

// Decode on packed weights (packed_weight.h) with int8 activations.
struct PackedGemvArgs {
  const PackedWeight* w;
  int64_t group0;  // the view's first group in w
  int64_t rows;    // the view's rows (y columns written)
  int64_t m;
  const int8_t* xq;   // m rows of quantized activations, xq_stride bytes apart
  int64_t xq_stride;  // = cols
  const float* xd;    // m x blocks activation block scales
  const int32_t* xs;  // m x blocks sums of the quantized activations
  float* y;
  int64_t ldy;
  const int32_t* xs_lo = nullptr;  // m x blocks sums of each block's first 16 (Q6_K's half-blocks)
};
using PackedKernelFn = void (*)(const PackedGemvArgs& a, int64_t g_begin, int64_t g_end);  // groups of the view
struct PackedDecodeKernels {
  // sums: per 32-column block; sums_lo: of its first 16 columns.
  void (*quantize)(const float* x, int64_t ldx, int64_t m, int64_t cols, int8_t* q, float* d, int32_t* sums,
                   int32_t* sums_lo);
  struct ForType {
    DType type;
    PackedKernelFn fn;
  };
  ForType kernels[12];  // one per packed type (can_pack_for_decode)
};
// The kernel of k for a packed weight's type (defined in the driver: baseline flags).
PackedKernelFn packed_kernel_for(const PackedDecodeKernels& k, DType t);
bool packed_decode_available();  // an int8 kernel table exists for this CPU (AVX2 or better)
const PackedDecodeKernels& packed_kernels(MatmulIsa isa);  // isa: kAvx512 or kAvx2, available

void run_gemv(ThreadPool& pool, const MatmulArgs& a, GemvFn fn);
// Decode on a type without a decode kernel: each thread dequantizes tiles of a few rows into fp32
// and runs the ISA's f32 kernel `f32_gemv` on them.
void run_gemv_dequantized(ThreadPool& pool, const MatmulArgs& a, GemvFn f32_gemv);
void run_packed_gemv(ThreadPool& pool, const MatmulArgs& a, const PackedDecodeKernels& k);
// Several decode matmuls over the same activations as one job (matmul_group): the rows of every
// target in one sequence of chunks. run_gemv_group: fns[i] computes targets[i] (at most
// kMaxGroup targets). run_packed_gemv_group: every target packed, of one type and one cols.
constexpr size_t kMaxGroup = 8;
void run_gemv_group(ThreadPool& pool, std::span<const MatmulArgs> targets, const GemvFn* fns);
void run_packed_gemv_group(ThreadPool& pool, std::span<const MatmulArgs> targets, const PackedDecodeKernels& k);
// Prefill on packed weights: the decode kernels over tiles of kGemvMaxM activation rows, the
// weights walked in L2-sized chunks of groups.
void run_packed_gemm(ThreadPool& pool, const MatmulArgs& a, const PackedDecodeKernels& k);
void run_gemm(ThreadPool& pool, const MatmulArgs& a, const GemmKernels& k);

// Runs the multiplication on an explicit path; the ISA must be available. Precision kBf16Activations
// (and kFastest where bf16_gemm_preferred()) takes effect only where the public matmul would use
// it (m >= kBf16MinRows, BF16/F16/Q8_0/Q4_0 weights, AVX512-BF16 present, isa == kAvx512).
void matmul_with(MatmulIsa isa, GemmPrecision precision, ThreadPool& pool, const WeightView& w,
                 const float* x, int64_t m, int64_t ldx, float* y, int64_t ldy);

// matmul_group on an explicit path (tests, benchmarks).
void matmul_group_with(MatmulIsa isa, GemmPrecision precision, ThreadPool& pool, std::span<const MatmulTarget> targets,
                       const float* x, int64_t m, int64_t ldx);

// Scaled fp16 activations (WeightView::half_activations): a row whose largest magnitude is
// amax = f 2^e (f in [0.5, 1)) is multiplied by scale = 2^(15 - e), so amax lands in [2^14,
// 2^15), far below fp16's overflow at 65504, and every element down to amax 2^-29 keeps fp16's
// 11 significant bits. Returns false where the row must stay fp32: it holds a NaN or an
// infinity, or amax is zero or below 1e-30 (the scale would not fit a float). Defined in a
// baseline file and called from the AVX-512 one (no inline copy for the linker to merge).
bool half_activation_scale(float amax, bool has_nan, float& scale, float& inverse_scale);
// Whether matmul_with rounds x to that grid for m > 1 (m = 1 on AVX-512 reads fp16 directly).
bool rounds_to_half_grid(MatmulIsa isa, const WeightView& w, int64_t m, bool bf16_gemm);
// x's m rows (stride ldx) on the grid: scaled, rounded to fp16 (to nearest even), scaled back
// into out (stride n); a row that must stay fp32 is copied as it is.
void round_to_half_grid(const float* x, int64_t m, int64_t ldx, int64_t n, float* out);

// A per-thread 64-byte-aligned buffer, one per slot, grown on demand and kept for the thread's
// lifetime, so steady-state calls allocate nothing.
enum ScratchSlot { kScratchPackedX = 0, kScratchPanel = 1, kScratchScales = 2, kScratchQuantX = 3, kScratchRows = 4, kScratchHalfX = 5,
                  kScratchHalfGrid = 6, kScratchSlots = 7 };
void* thread_scratch(ScratchSlot slot, size_t bytes);

}  // namespace tandem::cpu::detail
