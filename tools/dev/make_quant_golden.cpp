// Developer tool: writes tests/core/golden/*.bin from ggml's own reference functions, loaded
// from a libggml-base.so (e.g. the one inside the node-llama-cpp npm package) with dlopen.
// Nothing of ggml is compiled into tandem; this only records what ggml outputs.
//
//   g++ -std=c++20 -O1 -I. tools/dev/make_quant_golden.cpp -ldl -o /tmp/make_quant_golden
//   /tmp/make_quant_golden /path/to/libggml-base.so tests/core/golden
#include <dlfcn.h>

#include <cstdio>
#include <string>

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
  const bool ok = dump("q4_0.bin", q4, size_t(n / 32 * 18)) && dump("q8_0.bin", q8, size_t(n / 32 * 34)) &&
                  dump("f16.bin", f16, size_t(n * 2)) && dump("bf16.bin", bf16, size_t(n * 2));
  return ok ? 0 : 1;
}
