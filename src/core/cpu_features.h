// What the host CPU can run, detected once at run time so one binary serves every x86-64 machine
// (cpuid) and every aarch64 one (the kernel's hwcaps).
#pragma once

#include <string>

namespace tandem {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512bf16 = false;
  bool avx512vnni = false;
  bool amx_bf16 = false;  // AMX tiles with bf16 products (Intel Sapphire Rapids and later)
  // aarch64: Advanced SIMD (every ARMv8-A core), its fp16 arithmetic (ARMv8.2 FEAT_FP16), the int8
  // dot product SDOT/UDOT (FEAT_DotProd) and the int8 matrix multiply SMMLA/USDOT (FEAT_I8MM).
  bool neon = false;
  bool fp16_arith = false;
  bool dotprod = false;
  bool i8mm = false;
  std::string describe() const;  // e.g. "avx2 fma f16c avx512f", "neon fp16 dotprod i8mm"
};

const CpuFeatures& cpu_features();

}  // namespace tandem
