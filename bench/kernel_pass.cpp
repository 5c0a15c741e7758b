// One matmul on the path this CPU takes, repeated: weight bytes per pass, seconds per pass and
// GB/s. A plain program (no Google Benchmark) so it also builds for aarch64 and runs under qemu,
// where its time means nothing but its instruction count does: the timed passes run between calls
// of kernel_pass_begin() and kernel_pass_end(), which qemu's instruction log names
// (bench/kernel-instructions.sh counts the instructions between them).
//
//   kernel_pass --type q4_0 --rows 1024 --cols 4096 -m 1 --passes 50 [--json]
//   kernel_pass --op kv-scores --rows 4096 --cols 128 -m 8 [--kv-fp32]   (attention over an f16 cache)
//
// --op kv-scores / kv-sums run attention's products over one head of an f16 cache (kv_products.h):
// rows cached tokens of cols (head_dim) values, m query rows; fp16 arithmetic where the CPU has it,
// unless --kv-fp32.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "devices/cpu/matmul/kv_products.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/cpu/matmul/packed_weight.h"

// Markers around the timed passes for an instruction trace (never inlined, so they stay calls).
extern "C" __attribute__((noinline)) void kernel_pass_begin() { __asm__ volatile(""); }
extern "C" __attribute__((noinline)) void kernel_pass_end() { __asm__ volatile(""); }

int main(int argc, char** argv) {
  using namespace tandem;
  CLI::App app{"One CPU matmul on this CPU's kernel path, repeated: seconds and GB/s per pass"};
  std::string type_name = "q4_0";
  int64_t rows = 1024, cols = 4096, m = 1;
  int passes = 20, threads = 1;
  bool json = false, kv_fp32 = false;
  std::string op = "matmul";
  app.add_option("--type", type_name, "weight type (f32, f16, bf16, q8_0, q4_0, q4_k, ...)");
  app.add_option("--rows", rows, "weight rows (outputs)")->check(CLI::PositiveNumber);
  app.add_option("--cols", cols, "weight columns (inputs; a multiple of the type's block)")->check(CLI::PositiveNumber);
  app.add_option("-m", m, "activation rows: 1-8 decode (GEMV), more prefill (GEMM)")->check(CLI::PositiveNumber);
  app.add_option("--passes", passes, "timed passes (0: setup only)")->check(CLI::NonNegativeNumber);
  app.add_option("-t,--threads", threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--op", op, "matmul, kv-scores (q K^T) or kv-sums (p V)")
      ->check(CLI::IsMember({"matmul", "kv-scores", "kv-sums"}));
  app.add_flag("--kv-fp32", kv_fp32, "kv-*: the fp32 kernels even where fp16 arithmetic exists");
  app.add_flag("--json", json, "one JSON object instead of a table");
  CLI11_PARSE(app, argc, argv);

  const bool kv = op != "matmul";
  if (kv) type_name = "f16";
  const std::optional<DType> type = dtype_from_name(type_name);
  if (!type) {
    std::fprintf(stderr, "kernel_pass: --type %s is not a weight type tandem reads\n", type_name.c_str());
    return 2;
  }
  const size_t block = dtype_traits(*type).block_size;
  if (cols % int64_t(block) != 0) {
    std::fprintf(stderr, "kernel_pass: --cols %lld is not a multiple of %s's block of %zu\n", (long long)cols,
                 type_name.c_str(), block);
    return 2;
  }
  // Random weights quantized as a model file holds them, and random activations.
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t rb = row_bytes(*type, size_t(cols));
  std::vector<uint8_t> bytes(rb * size_t(rows));
  std::vector<float> row(static_cast<size_t>(cols)), x(size_t(m * cols)), y(size_t(m * rows));
  // Two distinct rows, repeated: the K-quants' quantizers cost about a thousand instructions per
  // element, which would make tracing the setup under qemu slow.
  for (int64_t r = 0; r < rows; ++r) {
    if (r >= 2) {
      std::memcpy(bytes.data() + size_t(r) * rb, bytes.data() + size_t(r % 2) * rb, rb);
      continue;
    }
    for (float& v : row) v = 0.02f * normal(rng);
    quantize_row(*type, row.data(), bytes.data() + size_t(r) * rb, size_t(cols));
  }
  for (float& v : x) v = normal(rng);
  ThreadPool pool(threads);
  cpu::WeightView w{*type, bytes.data(), rows, cols, rb};
  std::unique_ptr<cpu::PackedWeight> packed;
  if (cpu::can_pack_for_decode(*type) && cpu::decode_precision() == cpu::DecodePrecision::kInt8Activations) {
    packed = cpu::pack_for_decode(pool, w);
    w.packed = packed.get();
  }
  const bool kv_fp16 = kv && !kv_fp32 && cpu::kv_f16_arithmetic() == std::string("fp16");
  // kv-sums: x is m rows of `rows` probabilities, y m rows of cols sums.
  std::vector<float> probabilities(size_t(m * rows), 1.0f / float(rows)), sums(size_t(m * cols));
  auto pass = [&] {
    if (op == "matmul") cpu::matmul(pool, w, x.data(), m, cols, y.data(), rows);
    if (op == "kv-scores") cpu::detail::key_scores_with(kv_fp16, pool, w, x.data(), m, cols, y.data(), rows);
    if (op == "kv-sums") cpu::detail::value_sums_with(kv_fp16, w, probabilities.data(), m, rows, sums.data(), cols);
  };
  if (passes > 0) pass();  // warm the caches and scratch
  kernel_pass_begin();
  const auto t0 = std::chrono::steady_clock::now();
  for (int p = 0; p < passes; ++p) pass();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kernel_pass_end();
  const double per_pass = passes > 0 ? seconds / passes : 0;
  const double gbps = per_pass > 0 ? double(bytes.size()) / per_pass / 1e9 : 0;
  const std::string path = kv ? std::string(kv_fp16 ? "fp16" : "fp32") + " " + op
                              : std::string(cpu::matmul_isa()) + (w.packed ? " int8" : "");
  if (json) {
    std::printf("%s\n", nlohmann::json{{"type", type_name},
                                       {"rows", rows},
                                       {"cols", cols},
                                       {"m", m},
                                       {"threads", threads},
                                       {"path", path},
                                       {"cpu", cpu_features().describe()},
                                       {"weight_bytes", bytes.size()},
                                       {"passes", passes},
                                       {"seconds_per_pass", per_pass},
                                       {"weight_gb_per_s", gbps}}
                            .dump()
                            .c_str());
  } else {
    std::printf("| type | rows x cols | m | path | weight bytes | passes | ms/pass | weight GB/s |\n");
    std::printf("|---|---|--:|---|--:|--:|--:|--:|\n");
    std::printf("| %s | %lld x %lld | %lld | %s | %zu | %d | %.3f | %.2f |\n", type_name.c_str(), (long long)rows,
                (long long)cols, (long long)m, path.c_str(), bytes.size(), passes, per_pass * 1e3, gbps);
  }
  // Keep the result alive: a checksum nobody reads would let the compiler drop the work.
  double sum = 0;
  for (float v : y) sum += v;
  for (float v : sums) sum += v;
  return sum == 12345.678 ? 3 : 0;
}
