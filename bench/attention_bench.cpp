// Decode attention over an f16 KV cache at depth (Google Benchmark): one token's query heads
// against a model's KV heads in each layer's cache of `depth` tokens.
//   shape 0: TinyLlama-1.1B, 22 layers of 32 query heads over 4 KV heads of 64;
//   shape 1: Gemma-3-1B, 26 layers of 4 query heads over 1 KV head of 256, all timed as its global
//            layers (no sliding window). Fewer KV heads than threads: the keys are split into
//            segments (attention.cpp).
// hot 0: every layer's cache (4 MiB a layer for TinyLlama at depth 4096) comes from memory as in a
// real decode; hot 1: one layer, whose cache stays in the CPU caches, which leaves the kernels'
// arithmetic alone (the difference is what memory costs).
//
//   BM_DecodeAttention/depth/thr/layout/shape/hot   layout: 0 token-major, 1 head-major (core/kv_layout.h)
//   counters: tokens/s (of all the model's layers, at this rate per layer), KV GB/s (cache bytes
//   read per second); the time is for the layers timed (one when hot)
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

struct Shape {
  int layers, heads, kv_heads, head_dim;
};
constexpr Shape kShapes[] = {{22, 32, 4, 64}, {26, 4, 1, 256}};

void BM_DecodeAttention(benchmark::State& state) {
  const int depth = int(state.range(0)), threads = int(state.range(1));
  const Shape shape = kShapes[state.range(3)];
  const int layers = state.range(4) ? 1 : shape.layers, q_width = shape.heads * shape.head_dim;
  tandem::KvGeometry g;
  g.capacity = uint32_t(depth + 1);
  g.heads = uint32_t(shape.kv_heads);
  g.head_dim = uint32_t(shape.head_dim);
  g.page_tokens = g.capacity;
  g.layout = state.range(2) ? tandem::KvLayout::kHeadMajor : tandem::KvLayout::kTokenMajor;
  // Random f16 keys and values in [-1, 1): the same bytes in every layer's K and V caches.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> pattern(size_t(g.bytes() / 2));
  for (auto& h : pattern) h = tandem::f32_to_fp16(u(rng));
  const std::vector<std::vector<uint16_t>> keys(size_t(layers), pattern), values(size_t(layers), pattern);
  std::vector<float> q(static_cast<size_t>(q_width)), out(static_cast<size_t>(q_width));
  for (auto& x : q) x = u(rng);
  tandem::ThreadPool pool(threads);
  for (auto _ : state)
    for (int l = 0; l < layers; ++l)
      tandem::cpu::attention_pages(pool, q.data(), q_width, g, reinterpret_cast<const uint8_t*>(keys[size_t(l)].data()),
                                   reinterpret_cast<const uint8_t*>(values[size_t(l)].data()), out.data(), q_width, 1,
                                   shape.heads, depth, {});
  benchmark::DoNotOptimize(out.data());
  state.counters["tokens/s"] =
      benchmark::Counter(double(layers) / shape.layers, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["KV GB/s"] = benchmark::Counter(2.0 * layers * double(g.bytes()) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"depth", "thr", "layout", "shape", "hot"})
    ->Args({4096, 1, 0, 0, 0})->Args({4096, 2, 0, 0, 0})->Args({4096, 1, 1, 0, 0})->Args({4096, 2, 1, 0, 0})
    ->Args({1024, 2, 0, 0, 0})->Args({1024, 2, 1, 0, 0})
    ->Args({4096, 1, 1, 0, 1})->Args({4096, 2, 1, 0, 1})
    ->Args({4096, 1, 1, 1, 0})->Args({4096, 2, 1, 1, 0})->Args({4096, 2, 1, 1, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
