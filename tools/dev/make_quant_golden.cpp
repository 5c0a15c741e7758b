// Developer tool: writes tests/core/golden/*.bin from ggml's own reference functions, loaded
// from a libggml-base.so (e.g. the one inside the node-llama-cpp npm package) with dlopen.
// Nothing of ggml is compiled into tandem; this only records what ggml outputs.
//
//   g++ -std=c++20 -O1 -I. tools/dev/make_quant_golden.cpp -ldl -o /tmp/make_quant_golden
//   /tmp/make_quant_golden /path/to/libggml-base.so tests/core/golden
//
// Q4_0, Q8_0, f16, bf16: golden_inputs() through quantize_row_*_ref. Every other type:
// golden_inputs_k() through quantize_<type>(x, y, rows, 256, no importance matrix) -- the call
// llama-quantize makes -- into <type>.bin, and ggml's dequantize_row_<type> of those bytes, as
// the SHA-256 of the floats, into dequant.sha256 ("<type> <hex>" lines; sha256sum of
// <type>.deq, which the tool leaves in /tmp).
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "tests/core/golden_inputs.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s libggml-base.so OUT_DIR\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  using Quant = void (*)(const float*, void*, int64_t);
  using RowConv = void (*)(const float*, void*, int64_t);
  auto q4 = reinterpret_cast<Quant>(dlsym(lib, "quantize_row_q4_0_ref"));
  auto q8 = reinterpret_cast<Quant>(dlsym(lib, "quantize_row_q8_0_ref"));
  auto f16 = reinterpret_cast<RowConv>(dlsym(lib, "ggml_fp32_to_fp16_row"));
  auto bf16 = reinterpret_cast<RowConv>(dlsym(lib, "ggml_fp32_to_bf16_row_ref"));
  if (!q4 || !q8 || !f16 || !bf16) {
    std::fprintf(stderr, "missing symbols\n");
    return 1;
  }
  const std::vector<float> x = tandem::golden::golden_inputs();
  const int64_t n = int64_t(x.size());
  auto dump = [&](const char* name, auto fn, size_t bytes) {
    std::vector<unsigned char> out(bytes);
    fn(x.data(), out.data(), n);
    const std::string path = std::string(argv[2]) + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    std::fwrite(out.data(), 1, out.size(), f);
    std::fclose(f);
    std::printf("wrote %s (%zu bytes)\n", path.c_str(), out.size());
    return true;
  };
  bool ok = dump("q4_0.bin", q4, size_t(n / 32 * 18)) && dump("q8_0.bin", q8, size_t(n / 32 * 34)) &&
            dump("f16.bin", f16, size_t(n * 2)) && dump("bf16.bin", bf16, size_t(n * 2));

  using QuantRows = size_t (*)(const float*, void*, int64_t, int64_t, const float*);
  using Dequant = void (*)(const void*, float*, int64_t);
  struct Kind {
    const char* name;     // tandem's and the file's
    const char* ggml;     // ggml's function suffix
    size_t block, bytes;  // elements and bytes per block
  };
  const Kind kinds[] = {{"q4_1", "q4_1", 32, 20},   {"q5_0", "q5_0", 32, 22},    {"q5_1", "q5_1", 32, 24},
                        {"q2_k", "q2_K", 256, 84},  {"q3_k", "q3_K", 256, 110},  {"q4_k", "q4_K", 256, 144},
                        {"q5_k", "q5_K", 256, 176}, {"q6_k", "q6_K", 256, 210},  {"iq4_nl", "iq4_nl", 32, 18},
                        {"iq4_xs", "iq4_xs", 256, 136}};
  const std::vector<float> xk = tandem::golden::golden_inputs_k();
  const int64_t nk = int64_t(xk.size()), rows = nk / 256;
  for (const Kind& k : kinds) {
    auto quant = reinterpret_cast<QuantRows>(dlsym(lib, ("quantize_" + std::string(k.ggml)).c_str()));
    auto deq = reinterpret_cast<Dequant>(dlsym(lib, ("dequantize_row_" + std::string(k.ggml)).c_str()));
    if (!quant || !deq) {
      std::fprintf(stderr, "missing quantize_/dequantize_row_%s\n", k.ggml);
      return 1;
    }
    std::vector<unsigned char> q(size_t(nk) / k.block * k.bytes);
    quant(xk.data(), q.data(), rows, 256, nullptr);
    std::vector<float> back(static_cast<size_t>(nk));
    deq(q.data(), back.data(), nk);
    const std::string qpath = std::string(argv[2]) + "/" + k.name + ".bin", dpath = std::string("/tmp/") + k.name + ".deq";
    for (auto [path, data, bytes] : {std::tuple{qpath, (const void*)q.data(), q.size()},
                                     std::tuple{dpath, (const void*)back.data(), back.size() * 4}}) {
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) return 1;
      std::fwrite(data, 1, bytes, f);
      std::fclose(f);
      std::printf("wrote %s (%zu bytes)\n", path.c_str(), bytes);
    }
  }
  return ok ? 0 : 1;
}
