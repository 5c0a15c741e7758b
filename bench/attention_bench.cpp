// Decode attention over an f16 KV cache at depth (Google Benchmark): one token's 32 query heads
// against 4 KV heads of 64 (the TinyLlama-1.1B shape) in each of `layers` layers' caches of
// `depth` tokens. With 22 layers the caches (4 MiB a layer at depth 4096) come from memory as in
// a real decode; with 1 they stay in the caches, which leaves the kernels' arithmetic alone (the
// difference is what memory costs).
//
//   BM_DecodeAttention/depth/thr/layout/layers   layout: 0 token-major, 1 head-major (core/kv_layout.h)
//   counters: tokens/s (of the model's 22 layers, at this rate per layer), KV GB/s (cache bytes
//   read per second); the time is for `layers` layers
// Run e.g.  attention_bench --benchmark_filter='depth:4096/'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/kv_layout.h"
#include "core/thread_pool.h"
#include "devices/cpu/attention.h"

namespace {

constexpr int kModelLayers = 22, kHeads = 32, kKvHeads = 4, kHeadDim = 64;

void BM_DecodeAttention(benchmark::State& state) {
  const int depth = int(state.range(0)), threads = int(state.range(1)), layers = int(state.range(3));
  tandem::KvGeometry g;
  g.capacity = uint32_t(depth + 1);
  g.heads = kKvHeads;
  g.head_dim = kHeadDim;
  g.page_tokens = g.capacity;
  g.layout = state.range(2) ? tandem::KvLayout::kHeadMajor : tandem::KvLayout::kTokenMajor;
  // Random f16 keys and values in [-1, 1): the same bytes in every layer's K and V caches.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> pattern(size_t(g.bytes() / 2));
  for (auto& h : pattern) h = tandem::f32_to_fp16(u(rng));
  const std::vector<std::vector<uint16_t>> keys(size_t(layers), pattern), values(size_t(layers), pattern);
  std::vector<float> q(kHeads * kHeadDim), out(kHeads * kHeadDim);
  for (auto& x : q) x = u(rng);
  tandem::ThreadPool pool(threads);
  for (auto _ : state)
    for (int l = 0; l < layers; ++l)
      tandem::cpu::attention_pages(pool, q.data(), kHeads * kHeadDim, g,
                                   reinterpret_cast<const uint8_t*>(keys[size_t(l)].data()),
                                   reinterpret_cast<const uint8_t*>(values[size_t(l)].data()), out.data(),
                                   kHeads * kHeadDim, 1, kHeads, depth, {});
  benchmark::DoNotOptimize(out.data());
  state.counters["tokens/s"] = benchmark::Counter(double(layers) / kModelLayers, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["KV GB/s"] = benchmark::Counter(2.0 * layers * double(g.bytes()) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"depth", "thr", "layout", "layers"})
    ->Args({4096, 1, 0, 22})->Args({4096, 2, 0, 22})->Args({4096, 1, 1, 22})->Args({4096, 2, 1, 22})
    ->Args({1024, 2, 0, 22})->Args({1024, 2, 1, 22})
    ->Args({4096, 1, 1, 1})->Args({4096, 2, 1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
