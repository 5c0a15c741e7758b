// Matmul benchmarks on the TinyLlama-1.1B shapes.
//
//   BM_ReadBandwidth/threads/prefetch  streaming sum over 1 GiB: the achievable read bandwidth that
//                                      decode (m = 1) should approach.
//   BM_Matmul/type/shape/m/thr/bf16/hot one matmul (hot=1: weights cached, compute limit); counters GFLOP/s (2*m*rows*cols) and weight GB/s.
//   BM_TinyLlama/m/threads/p           every matmul of one forward pass (22 layers x q,k,v,o,gate,
//                                      up,down + output) on distinct Q4_0 weights: tokens/s
//                                      estimates pp (m = 512) and tg (m = 1) without attention.
// p: 0 = fp32 GEMM, 1 = bf16 activations (only matters for m >= kBf16MinRows), 2 = the reduced
//    decode arithmetic the cpu device uses by default: packed weights with int8 activations
//    (Q4_0 / Q8_0, AVX-512 VNNI), fp16 activations for F16 / BF16 (WeightView::half_activations).
// Run e.g.  matmul_bench --benchmark_filter='Matmul/4/' (type 4 = Q4_0).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/matmul/packed_weight.h"

namespace {

using tandem::DType;
using tandem::ThreadPool;
using tandem::cpu::GemmPrecision;
using tandem::cpu::WeightView;

ThreadPool& pool(int threads) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

constexpr DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0};
struct Shape {
  const char* name;
  int64_t rows, cols;
};
constexpr Shape kShapes[] = {{"q/o", 2048, 2048}, {"k/v", 256, 2048}, {"gate/up", 5632, 2048},
                             {"down", 2048, 5632}, {"output", 32000, 2048}};

// 64-byte aligned storage for the bandwidth buffer (aligned zmm loads).
template <class T>
struct AlignedAlloc {
  using value_type = T;
  AlignedAlloc() = default;
  template <class U>
  AlignedAlloc(const AlignedAlloc<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const AlignedAlloc&) const { return true; }
};

uint64_t next_random(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// A weight with random contents that are valid numbers (quantized blocks get small positive
// fp16 scales), generated directly in the stored layout; quantizing floats would take far longer.
struct BenchWeight {
  std::vector<uint8_t> bytes;
  WeightView view;
  BenchWeight(DType type, int64_t rows, int64_t cols, uint64_t seed) {
    const size_t rb = tandem::row_bytes(type, size_t(cols));
    bytes.resize(rb * size_t(rows));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
      const uint64_t v = next_random(s);
      std::memcpy(&bytes[i], &v, 8);
    }
    const size_t n = size_t(rows) * size_t(cols);
    if (type == DType::F32) {
      float* p = reinterpret_cast<float*>(bytes.data());
      for (size_t i = 0; i < n; ++i) p[i] = float(int(next_random(s) % 2001) - 1000) * 1e-4f;
    } else if (type == DType::F16 || type == DType::BF16) {
      uint16_t* p = reinterpret_cast<uint16_t*>(bytes.data());
      for (size_t i = 0; i < n; ++i) {
        const float v = float(int(next_random(s) % 2001) - 1000) * 1e-4f;
        p[i] = type == DType::F16 ? tandem::f32_to_fp16(v) : tandem::f32_to_bf16(v);
      }
    } else {
      const size_t block_bytes = type == DType::Q4_0 ? sizeof(tandem::BlockQ4_0) : sizeof(tandem::BlockQ8_0);
      const tandem::fp16_t d = tandem::f32_to_fp16(0.01f);
      for (size_t off = 0; off < bytes.size(); off += block_bytes) std::memcpy(&bytes[off], &d, 2);
    }
    view = WeightView{type, bytes.data(), rows, cols, rb};
  }
};

std::vector<float> activations(int64_t m, int64_t cols) {
  std::vector<float> x(size_t(m * cols));
  uint64_t s = 42;
  for (float& v : x) v = float(int(next_random(s) % 2001) - 1000) * 1e-3f;
  return x;
}

// Sums 64-byte vectors over [b, e) (uint64 lanes), optionally prefetching `ahead` bytes in front:
// the loads, not the adds, are the limit, and scalar loads would cap one core below what its
// memory delivers. Compiled for AVX-512 via a target attribute (callers check the CPU).
__attribute__((target("avx512f"))) uint64_t sum_avx512(const uint64_t* p, size_t b, size_t e, size_t ahead) {
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = b; i + 32 <= e; i += 32) {
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(p + i) + ahead, _MM_HINT_T0);
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(p + i + 8) + ahead, _MM_HINT_T0);
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(p + i + 16) + ahead, _MM_HINT_T0);
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(p + i + 24) + ahead, _MM_HINT_T0);
    s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i));
    s1 = _mm512_add_epi64(s1, _mm512_load_si512(p + i + 8));
    s2 = _mm512_add_epi64(s2, _mm512_load_si512(p + i + 16));
    s3 = _mm512_add_epi64(s3, _mm512_load_si512(p + i + 24));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3)));
  uint64_t total = 0;
  for (uint64_t v : lanes) total += v;
  return total;
}

// BM_ReadBandwidth/threads/prefetch: streaming sum over 1 GiB (64-byte loads on AVX-512 CPUs,
// else eight scalar sums); prefetch=1 adds the decode kernels' 4 KB software prefetch. The larger
// of the two is the read bandwidth the decode figures are rated against.
void BM_ReadBandwidth(benchmark::State& state) {
  const int threads = int(state.range(0));
  const size_t ahead = state.range(1) ? 4096 : 0;
  const size_t n = size_t(1) << 27;  // 1 GiB of uint64
  static std::vector<uint64_t, AlignedAlloc<uint64_t>> buf(n, 1);
  const bool wide = __builtin_cpu_supports("avx512f");
  ThreadPool& p = pool(threads);
  uint64_t sink = 0;
  for (auto _ : state) {
    std::vector<uint64_t> partial(size_t(threads) * 8);
    p.parallel_for(n / 32, [&](size_t b, size_t e, int ith) {
      if (wide) {
        partial[size_t(ith) * 8] = sum_avx512(buf.data(), b * 32, e * 32, ahead);
        return;
      }
      uint64_t s[8] = {};
      for (size_t i = b * 32; i + 8 <= e * 32; i += 8)
        for (int j = 0; j < 8; ++j) s[j] += buf[i + j];
      for (int j = 0; j < 8; ++j) partial[size_t(ith) * 8 + j] = s[j];
    });
    for (uint64_t v : partial) sink += v;
  }
  benchmark::DoNotOptimize(sink);
  state.counters["GB/s"] = benchmark::Counter(double(n * 8) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(wide ? "zmm loads" : "scalar loads");
}
BENCHMARK(BM_ReadBandwidth)->ArgNames({"thr", "prefetch"})->Args({1, 0})->Args({1, 1})->Args({2, 0})->Args({2, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

// Peak arithmetic of one core, to rate the GEMMs: 12 independent zmm FMA chains (fp32) or
// vdpbf16ps chains (bf16 pairs; 2 MACs per fp32 lane). Compiled for AVX-512 via target attributes;
// skipped on CPUs without it.
template <bool kBf16>
__attribute__((target("avx512f,avx512bf16"))) float fma_loop(int64_t iters) {
  // Twelve named accumulators (an array would be kept in memory by GCC): 12 independent chains
  // cover latency 4-6 x 2 pipes.
  __m512 c0 = _mm512_set1_ps(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0,
         c9 = c0, c10 = c0, c11 = c0;
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-6f);
  const __m512i ah = _mm512_set1_epi32(0x3f803f80), bh = _mm512_set1_epi32(0x33803380);
#define TANDEM_STEP(c) \
  c = kBf16 ? _mm512_dpbf16_ps(c, (__m512bh)ah, (__m512bh)bh) : _mm512_fmadd_ps(c, a, b)
  for (int64_t n = 0; n < iters; ++n) {
    TANDEM_STEP(c0); TANDEM_STEP(c1); TANDEM_STEP(c2); TANDEM_STEP(c3); TANDEM_STEP(c4); TANDEM_STEP(c5);
    TANDEM_STEP(c6); TANDEM_STEP(c7); TANDEM_STEP(c8); TANDEM_STEP(c9); TANDEM_STEP(c10); TANDEM_STEP(c11);
    __asm__("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5));
    __asm__("" : "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
  }
#undef TANDEM_STEP
  const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                                 _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)),
                                               _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11))));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  return lanes[0] + lanes[15];
}

void BM_PeakFlops(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f") || (state.range(0) && !__builtin_cpu_supports("avx512bf16"))) {
    state.SkipWithError("no AVX-512 / AVX512-BF16");
    return;
  }
  const bool bf16 = state.range(0) != 0;
  const int64_t iters = int64_t(1) << 20;
  float sink = 0;
  for (auto _ : state) {
    int64_t n = iters;
    benchmark::DoNotOptimize(n);  // a fresh argument each time: the call cannot be hoisted
    sink += bf16 ? fma_loop<true>(n) : fma_loop<false>(n);
  }
  benchmark::DoNotOptimize(sink);
  // fp32 FMA: 16 lanes x 2 flops; vdpbf16ps: 16 lanes x 2 pairs x 2 flops.
  state.counters["GFLOP/s"] = benchmark::Counter(double(iters) * 12 * 16 * (bf16 ? 4 : 2) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(bf16 ? "vdpbf16ps zmm, 1 thread" : "vfmadd zmm fp32, 1 thread");
}
BENCHMARK(BM_PeakFlops)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);  // counters use CPU time

void BM_Matmul(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  const Shape shape = kShapes[state.range(1)];
  const int64_t m = state.range(2);
  const int threads = int(state.range(3));
  const GemmPrecision precision = state.range(4) ? GemmPrecision::kBf16Activations : GemmPrecision::kFp32;
  // Decode reads each weight byte once per call; for m = 1 rotate over copies totalling > L3 so
  // the weights come from memory, as in a real forward pass.
  const bool hot = state.range(5) != 0;  // weights stay in cache: the kernel's compute limit
  const int copies = m == 1 && !hot ? int(1 + (256ll << 20) / int64_t(tandem::row_bytes(type, size_t(shape.cols)) * size_t(shape.rows))) : 1;
  std::vector<std::unique_ptr<BenchWeight>> w;
  for (int c = 0; c < copies; ++c) w.push_back(std::make_unique<BenchWeight>(type, shape.rows, shape.cols, uint64_t(c + 1)));
  const std::vector<float> x = activations(m, shape.cols);
  std::vector<float> y(size_t(m * shape.rows));
  tandem::cpu::set_gemm_precision(precision);
  ThreadPool& p = pool(threads);
  // bf16 = 2: the reduced decode arithmetic (packed copies with int8 activations, or fp16 ones).
  std::vector<std::unique_ptr<tandem::cpu::PackedWeight>> packs;
  std::vector<WeightView> views;
  for (const auto& wc : w) {
    views.push_back(wc->view);
    if (state.range(4) == 2) {
      packs.push_back(tandem::cpu::pack_for_decode(p, wc->view));
      views.back().packed = packs.back().get();
      views.back().half_activations = true;
    }
  }
  int c = 0;
  for (auto _ : state) {
    tandem::cpu::matmul(p, views[size_t(c)], x.data(), m, shape.cols, y.data(), shape.rows);
    c = (c + 1) % copies;
  }
  benchmark::DoNotOptimize(y.data());
  state.SetLabel(std::string(tandem::dtype_name(type)) + " " + shape.name + " " + tandem::cpu::matmul_isa());
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(m * shape.rows * shape.cols) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(double(w[0]->view.row_bytes * size_t(shape.rows)) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
void matmul_args(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < 5; ++t)
    for (int s = 0; s < 5; ++s)
      for (int m : {1, 512})
        for (int threads : {1, 2})
          for (int prec : {0, 1}) {
            if (m == 1 && prec == 1) continue;  // decode is fp32 or (below) packed int8
            b->Args({t, s, m, threads, prec, 0});
            if (prec == 0 && (t >= 3 || (t >= 1 && m == 1))) b->Args({t, s, m, threads, 2, 0});
          }
}
void hot_decode_args(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < 5; ++t) b->Args({t, 1, 1, 1, 0, 1});  // k/v shape: small enough for L2
  for (int t = 3; t < 5; ++t) b->Args({t, 1, 1, 1, 2, 1});  // the same, packed with int8 activations
}
BENCHMARK(BM_Matmul)->Apply(hot_decode_args)->ArgNames({"type", "shape", "m", "thr", "bf16", "hot"})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Matmul)->Apply(matmul_args)->ArgNames({"type", "shape", "m", "thr", "bf16", "hot"})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TinyLlama(benchmark::State& state) {
  const int64_t m = state.range(0);
  const int threads = int(state.range(1));
  tandem::cpu::set_gemm_precision(state.range(2) ? GemmPrecision::kBf16Activations : GemmPrecision::kFp32);
  const bool packed = state.range(2) == 2;
  const DType type = kTypes[state.range(3)];
  constexpr int kLayers = 22;
  // Per layer: q, k, v, o, gate, up, down; then the output projection.
  const Shape layer[] = {kShapes[0], kShapes[1], kShapes[1], kShapes[0], kShapes[2], kShapes[2], kShapes[3]};
  // Shared by all runs of one type (~0.6 GB for Q4_0, 2.2 GB for F16); the last type is freed
  // when another is asked for, so a filter over all types peaks at one model.
  static std::vector<std::unique_ptr<BenchWeight>> weights;
  static std::vector<std::unique_ptr<tandem::cpu::PackedWeight>> packs;
  if (weights.empty() || weights.front()->view.type != type) {
    weights.clear();
    packs.clear();
    uint64_t seed = 1;
    for (int l = 0; l < kLayers; ++l)
      for (const Shape& s : layer) weights.push_back(std::make_unique<BenchWeight>(type, s.rows, s.cols, seed++));
    weights.push_back(std::make_unique<BenchWeight>(type, kShapes[4].rows, kShapes[4].cols, seed++));
  }
  // p = 2: the copies packed for the int8-activation kernels (made once, as many bytes again).
  if (packed && packs.empty())
    for (const auto& w : weights) packs.push_back(tandem::cpu::pack_for_decode(pool(threads), w->view));
  std::vector<WeightView> views;
  for (size_t i = 0; i < weights.size(); ++i) {
    views.push_back(weights[i]->view);
    if (packed) views.back().packed = packs[i].get();
    views.back().half_activations = packed;
  }
  const std::vector<float> x = activations(m, 5632);
  std::vector<float> y(size_t(m * 32000));
  ThreadPool& p = pool(threads);
  double flops = 0, bytes = 0;
  for (const auto& w : weights) {
    flops += 2.0 * double(m * w->view.rows * w->view.cols);
    bytes += double(w->view.row_bytes * size_t(w->view.rows));
  }
  for (auto _ : state) {
    for (const WeightView& v : views) tandem::cpu::matmul(p, v, x.data(), m, v.cols, y.data(), v.rows);
  }
  benchmark::DoNotOptimize(y.data());
  state.counters["tokens/s"] = benchmark::Counter(double(m), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TinyLlama)
    ->ArgNames({"m", "thr", "bf16", "type"})  // type: index into kTypes (1 F16, 2 BF16, 3 Q8_0, 4 Q4_0)
    ->Args({1, 1, 0, 4})->Args({1, 2, 0, 4})->Args({1, 1, 2, 4})->Args({1, 2, 2, 4})
    ->Args({512, 2, 0, 4})->Args({512, 2, 1, 4})->Args({512, 1, 1, 4})->Args({512, 2, 2, 4})->Args({512, 1, 2, 4})
    ->Args({1, 1, 2, 3})->Args({1, 2, 2, 3})
    ->Args({1, 1, 0, 1})->Args({1, 2, 0, 1})->Args({1, 1, 0, 2})->Args({1, 2, 0, 2})
    ->Args({1, 1, 2, 1})->Args({1, 2, 2, 1})->Args({1, 1, 2, 2})->Args({1, 2, 2, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
