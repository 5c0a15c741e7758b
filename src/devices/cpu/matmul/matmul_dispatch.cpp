// Public entry points: picks the ISA once from cpu_features(), picks decode (GEMV) or prefill
// (GEMM, fp32 or bf16 activations) from m, and hands the work to the driver.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/cpu_features.h"
#include "core/quant.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/matmul/matmul_internal.h"

namespace tandem::cpu {
namespace detail {

const char* isa_name(MatmulIsa isa) {
  switch (isa) {
    case MatmulIsa::kAvx512: return "avx512";
    case MatmulIsa::kAvx2: return "avx2";
    case MatmulIsa::kNeon: {
      // The int8 instructions the decode and prefill kernels take on top of plain Advanced SIMD.
      const CpuFeatures& f = cpu_features();
      return f.i8mm && f.dotprod ? "neon+dotprod+i8mm" : f.dotprod ? "neon+dotprod" : "neon";
    }
    case MatmulIsa::kPortable: break;
  }
  return "portable";
}

bool isa_available(MatmulIsa isa) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  switch (isa) {
    case MatmulIsa::kAvx512: return avx2 && f.avx512f && f.avx512bw && f.avx512vl;
    case MatmulIsa::kAvx2: return avx2;
    case MatmulIsa::kNeon: return f.neon;
    case MatmulIsa::kPortable: break;
  }
  return true;
}

const IsaKernels& kernels_of(MatmulIsa isa) {
  switch (isa) {
#if defined(TANDEM_MATMUL_X86)
    case MatmulIsa::kAvx512: return avx512_kernels();
    case MatmulIsa::kAvx2: return avx2_kernels();
#elif defined(TANDEM_MATMUL_ARM64)
    case MatmulIsa::kNeon: return neon_kernels();
#endif
    default: break;
  }
  return portable_kernels();
}

bool bf16_gemm_available() { return isa_available(MatmulIsa::kAvx512) && cpu_features().avx512bf16; }

bool amx_bf16_usable() {
  static const bool usable = [] {
    if (!bf16_gemm_available() || !cpu_features().amx_bf16) return false;
#if defined(TANDEM_MATMUL_X86) && defined(__linux__)
    // Linux enables the 8 KB tile-data state per process, on request; the grant covers every
    // thread of the process, those already running included.
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return true;
    std::fprintf(stderr, "tandem: the CPU has AMX but Linux refused the tile state (%s); prompts use AVX-512\n",
                 std::strerror(errno));
#endif
    return false;
  }();
  return usable;
}

bool amx_gemm_runs(DType t) {
#if defined(TANDEM_MATMUL_X86)
  return amx_bf16_usable() && amx_bf16_gemm(t);
#else
  (void)t;
  return false;
#endif
}

const GemmKernels* bf16_gemm_for(DType t) {
#if defined(TANDEM_MATMUL_X86)
  return amx_gemm_runs(t) ? amx_bf16_gemm(t) : avx512_bf16_gemm(t);
#else
  (void)t;
  return nullptr;
#endif
}

bool bf16_gemm_taken(GemmPrecision precision, DType t) {
  return precision == GemmPrecision::kBf16Activations ||
         (precision == GemmPrecision::kFastest && bf16_gemm_preferred(t));
}

bool bf16_gemm_applies(MatmulIsa isa, GemmPrecision precision, DType t) {
  return isa == MatmulIsa::kAvx512 && bf16_gemm_available() && bf16_gemm_taken(precision, t);
}

bool packed_gemm_on_amx(MatmulIsa isa, GemmPrecision precision, DType t) {
  return isa == MatmulIsa::kAvx512 && precision == GemmPrecision::kFastest && packed_prefill_on_amx(t);
}

#if defined(TANDEM_MATMUL_X86)
bool packed_decode_available() { return isa_available(MatmulIsa::kAvx2); }

extern const PackedDecodeKernels kAvx512VnniPacked;
extern const PackedDecodeKernels kAvx2Packed;
// The AVX-512 path decodes with vpdpbusd where VNNI exists; else (and on the AVX2 path) the
// AVX2 kernels read the same packed layout.
const PackedDecodeKernels& packed_kernels(MatmulIsa isa) {
  return isa == MatmulIsa::kAvx512 && cpu_features().avx512vnni ? kAvx512VnniPacked : kAvx2Packed;
}
#elif defined(TANDEM_MATMUL_ARM64)
bool packed_decode_available() { return isa_available(MatmulIsa::kNeon); }

extern const PackedDecodeKernels kNeonI8mmPacked;
extern const PackedDecodeKernels kNeonDotprodPacked;
extern const PackedDecodeKernels kNeonPacked;
// SMMLA for pairs of activation rows and SDOT for single ones where the core has both; SDOT alone;
// else plain Advanced SIMD products (same layout, same integer sums on every path).
const PackedDecodeKernels& packed_kernels(MatmulIsa) {
  const CpuFeatures& f = cpu_features();
  return f.dotprod && f.i8mm ? kNeonI8mmPacked : f.dotprod ? kNeonDotprodPacked : kNeonPacked;
}
#else
bool packed_decode_available() { return false; }
const PackedDecodeKernels& packed_kernels(MatmulIsa) {
  std::fprintf(stderr, "tandem: packed_kernels() called where packed_decode_available() is false\n");
  std::abort();
}
#endif

MatmulIsa best_isa() {
  static const MatmulIsa isa = [] {
    if (isa_available(MatmulIsa::kAvx512)) return MatmulIsa::kAvx512;
    if (isa_available(MatmulIsa::kAvx2)) return MatmulIsa::kAvx2;
    if (isa_available(MatmulIsa::kNeon)) return MatmulIsa::kNeon;
    return MatmulIsa::kPortable;
  }();
  return isa;
}

int weight_type_index(DType t) {
  switch (t) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::BF16: return 2;
    case DType::Q8_0: return 3;
    case DType::Q4_0: return 4;
    default: return -1;
  }
}

void dequantize_range(const WeightView& w, int64_t row, int64_t k0, int64_t n, float* out) {
  const char* base = static_cast<const char*>(w.data) + size_t(row) * w.row_bytes;
  tandem::dequantize_row(w.type, base + row_bytes(w.type, size_t(k0)), out, size_t(n));
}

// Whether matmul_with would take the packed int8 decode path for this view.
bool takes_packed(MatmulIsa isa, const WeightView& w) {
  return w.packed && isa != MatmulIsa::kPortable && isa_available(isa) && packed_decode_available() &&
         w.packed_row0 % PackedWeight::kRows == 0 && w.packed_row0 + w.rows <= w.packed->rows;
}

namespace {
// Whether a product of m rows with w takes the bf16 GEMM (its own rounding of the activations).
bool takes_bf16_gemm(MatmulIsa isa, GemmPrecision precision, const WeightView& w, int64_t m) {
#if defined(TANDEM_MATMUL_X86)
  return m > kGemvMaxM && m >= kBf16MinRows && bf16_gemm_applies(isa, precision, w.type) && bf16_gemm_for(w.type) &&
         !(takes_packed(isa, w) && precision != GemmPrecision::kFp32);
#else
  (void)isa, (void)precision, (void)w, (void)m;
  return false;
#endif
}

// x's rows on the scaled fp16 grid, in the calling thread's scratch (stride cols).
const float* half_grid_of(const float* x, int64_t m, int64_t ldx, int64_t cols) {
  float* grid = static_cast<float*>(thread_scratch(kScratchHalfGrid, size_t(m * cols) * sizeof(float)));
  round_to_half_grid(x, m, ldx, cols, grid);
  return grid;
}
}  // namespace

void matmul_with(MatmulIsa isa, GemmPrecision precision, ThreadPool& pool, const WeightView& w,
                 const float* x, int64_t m, int64_t ldx, float* y, int64_t ldy) {
  if (m <= 0 || w.rows <= 0) return;
  if (w.cols > 0 && rounds_to_half_grid(isa, w, m, takes_bf16_gemm(isa, precision, w, m))) {
    // m > 1 gets the values the m = 1 kernel reads, then runs as on exact activations.
    WeightView on_grid = w;
    on_grid.half_activations = false;
    return matmul_with(isa, precision, pool, on_grid, half_grid_of(x, m, ldx, w.cols), m, w.cols, y, ldy);
  }
  const MatmulArgs args{w, x, m, ldx, y, ldy};
  if (w.cols <= 0) {  // empty sum
    for (int64_t i = 0; i < m; ++i) std::memset(y + i * ldy, 0, size_t(w.rows) * sizeof(float));
    return;
  }
  const IsaKernels& kernels = kernels_of(isa);
  const int t = weight_type_index(w.type);
  const bool packed = takes_packed(isa, w);
  if (t < 0 && !(packed && (m <= kGemvMaxM || precision != GemmPrecision::kFp32))) {
    // No kernel of its own (or the fp32 oracle of a packed type's prefill): dequantized rows
    // into the f32 kernels.
    if (m <= kGemvMaxM) return run_gemv_dequantized(pool, args, kernels.gemv[0]);
    return run_gemm(pool, args, kernels.gemm[0]);
  }
  if (m <= kGemvMaxM) {
    if (packed) {
      run_packed_gemv(pool, args, packed_kernels(isa));
      return;
    }
    run_gemv(pool, args, kernels.gemv[t]);
    return;
  }
  if (packed && precision != GemmPrecision::kFp32) {
#if defined(TANDEM_MATMUL_X86)
    if (m >= kBf16MinRows && packed_gemm_on_amx(isa, precision, w.packed->type))
      return run_gemm(pool, args, *amx_bf16_packed_gemm(w.packed->type));
#endif
    run_packed_gemm(pool, args, packed_kernels(isa));
    return;
  }
#if defined(TANDEM_MATMUL_X86)
  if (m >= kBf16MinRows && bf16_gemm_applies(isa, precision, w.type)) {
    if (const GemmKernels* bf16 = bf16_gemm_for(w.type)) {
      run_gemm(pool, args, *bf16);
      return;
    }
  }
#endif
  run_gemm(pool, args, kernels.gemm[t]);
}

void matmul_group_with(MatmulIsa isa, GemmPrecision precision, ThreadPool& pool, std::span<const MatmulTarget> targets,
                       const float* x, int64_t m, int64_t ldx) {
  auto one_by_one = [&] {
    for (const MatmulTarget& t : targets) matmul_with(isa, precision, pool, t.w, x, m, ldx, t.y, t.ldy);
  };
  if (targets.size() < 2 || targets.size() > kMaxGroup || m <= 0 || m > kGemvMaxM) return one_by_one();
  // One job only where every target would run the same kind of decode kernel on its own.
  const bool packed = takes_packed(isa, targets[0].w);
  for (const MatmulTarget& t : targets) {
    if (t.w.rows <= 0 || t.w.cols <= 0 || t.w.cols != targets[0].w.cols ||
        (weight_type_index(t.w.type) < 0 && !takes_packed(isa, t.w)) || takes_packed(isa, t.w) != packed ||
        (packed && t.w.packed->type != targets[0].w.packed->type))
      return one_by_one();
  }
  // Activations on the fp16 grid for all targets or none (m > 1; see matmul_with).
  const bool on_grid = rounds_to_half_grid(isa, targets[0].w, m, false);
  for (const MatmulTarget& t : targets)
    if (rounds_to_half_grid(isa, t.w, m, false) != on_grid) return one_by_one();
  if (on_grid) {
    x = half_grid_of(x, m, ldx, targets[0].w.cols);
    ldx = targets[0].w.cols;
  }
  MatmulArgs args[kMaxGroup];
  GemvFn fns[kMaxGroup];
  const IsaKernels& kernels = kernels_of(isa);
  for (size_t i = 0; i < targets.size(); ++i) {
    args[i] = {targets[i].w, x, m, ldx, targets[i].y, targets[i].ldy};
    if (on_grid) args[i].w.half_activations = false;
    fns[i] = packed ? nullptr : kernels.gemv[weight_type_index(targets[i].w.type)];
  }
  const std::span<const MatmulArgs> all(args, targets.size());
  if (packed) return run_packed_gemv_group(pool, all, packed_kernels(isa));
  run_gemv_group(pool, all, fns);
}

namespace {
// TANDEM_MATMUL_PRECISION: fp32 | bf16 | unset; anything else is said once and ignored.
const char* forced_precision() {
  static const char* name = [] {
    const char* e = std::getenv("TANDEM_MATMUL_PRECISION");
    if (!e || !*e) return "";
    if (std::strcmp(e, "fp32") == 0 || std::strcmp(e, "bf16") == 0) return e;
    std::fprintf(stderr, "tandem: TANDEM_MATMUL_PRECISION=%s is neither fp32 nor bf16; using the fastest arithmetic\n", e);
    return "";
  }();
  return name;
}
bool precision_forced(const char* name) { return std::strcmp(forced_precision(), name) == 0; }
bool fp32_forced() { return precision_forced("fp32"); }
std::atomic<GemmPrecision>& precision_state() {
  static std::atomic<GemmPrecision> p{fp32_forced()            ? GemmPrecision::kFp32
                                      : precision_forced("bf16") ? GemmPrecision::kBf16Activations
                                                                 : GemmPrecision::kFastest};
  return p;
}
std::atomic<DecodePrecision>& decode_precision_state() {
  static std::atomic<DecodePrecision> p{fp32_forced() ? DecodePrecision::kFp32 : DecodePrecision::kInt8Activations};
  return p;
}
}  // namespace

}  // namespace detail

const char* prefill_arithmetic(DType t) {
  const detail::MatmulIsa isa = detail::best_isa();
  const GemmPrecision precision = gemm_precision();
  // The order of matmul_with's choices for a long prompt.
  const bool packed = decode_precision() == DecodePrecision::kInt8Activations && isa != detail::MatmulIsa::kPortable &&
                      can_pack_for_decode(t);
  if (packed && precision != GemmPrecision::kFp32)
    return detail::packed_gemm_on_amx(isa, precision, t) ? "amx-bf16" : "int8";
  if (!detail::bf16_gemm_applies(isa, precision, t)) return "fp32";
#if defined(TANDEM_MATMUL_X86)
  if (detail::bf16_gemm_for(t)) return detail::amx_gemm_runs(t) ? "amx-bf16" : "bf16";
#endif
  return "fp32";
}

void set_gemm_precision(GemmPrecision p) { detail::precision_state().store(p, std::memory_order_relaxed); }
GemmPrecision gemm_precision() { return detail::precision_state().load(std::memory_order_relaxed); }
void set_decode_precision(DecodePrecision p) { detail::decode_precision_state().store(p, std::memory_order_relaxed); }
DecodePrecision decode_precision() { return detail::decode_precision_state().load(std::memory_order_relaxed); }

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t m, int64_t ldx, float* y,
            int64_t ldy) {
  detail::matmul_with(detail::best_isa(), gemm_precision(), pool, w, x, m, ldx, y, ldy);
}

void matmul_group(ThreadPool& pool, std::span<const MatmulTarget> targets, const float* x, int64_t m, int64_t ldx) {
  detail::matmul_group_with(detail::best_isa(), gemm_precision(), pool, targets, x, m, ldx);
}

namespace detail {
void weighted_row_sum_with(MatmulIsa isa, const WeightView& w, const float* p, int64_t m, int64_t ldp, float* y,
                           int64_t ldy) {
  if (m <= 0 || w.rows <= 0 || w.cols <= 0) return;
  const RowSumArgs args{w, p, m, ldp, y, ldy};
  const int t = weight_type_index(w.type);
  if (t < 0) return row_sum_portable(args);  // the KV cache's types all have kernels; any other is correct here
  switch (isa) {
#if defined(TANDEM_MATMUL_X86)
    case MatmulIsa::kAvx512: return kAvx512RowSum[t](args);
    case MatmulIsa::kAvx2: return kAvx2RowSum[t](args);
#elif defined(TANDEM_MATMUL_ARM64)
    case MatmulIsa::kNeon: return kNeonRowSum[t](args);
#endif
    default: break;
  }
  row_sum_portable(args);
}
}  // namespace detail

void weighted_row_sum(const WeightView& w, const float* p, int64_t m, int64_t ldp, float* y, int64_t ldy) {
  detail::weighted_row_sum_with(detail::best_isa(), w, p, m, ldp, y, ldy);
}

const char* matmul_isa() { return detail::isa_name(detail::best_isa()); }

void dequantize_row(const WeightView& w, int64_t row, float* out) {
  tandem::dequantize_row(w.type, static_cast<const char*>(w.data) + size_t(row) * w.row_bytes, out, size_t(w.cols));
}

}  // namespace tandem::cpu
