// What the host CPU can run, detected once at run time so one binary serves every x86-64 machine.
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
  std::string describe() const;  // e.g. "avx2 fma f16c avx512f"
};

const CpuFeatures& cpu_features();

}  // namespace tandem
