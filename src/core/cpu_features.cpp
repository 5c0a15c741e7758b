#include "core/cpu_features.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace tandem {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__x86_64__)
    // cpuid says what the core implements; xgetbv says whether the OS saves the wide registers
    // (a kernel without AVX-512 state support makes those instructions fault).
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = c & (1u << 27);
    const bool avx = c & (1u << 28);
    f.fma = c & (1u << 12);
    f.f16c = c & (1u << 29);
    uint64_t xcr0 = 0;
    if (osxsave) {
      unsigned lo = 0, hi = 0;
      __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      xcr0 = (uint64_t(hi) << 32) | lo;
    }
    const bool ymm_state = (xcr0 & 0x6) == 0x6;
    const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
    if (!avx || !ymm_state) {
      f.fma = f.f16c = false;
      return f;
    }
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      f.avx2 = b & (1u << 5);
      if (zmm_state) {
        f.avx512f = b & (1u << 16);
        f.avx512bw = b & (1u << 30);
        f.avx512vl = b & (1u << 31);
        f.avx512vnni = c & (1u << 11);
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512bf16 = a & (1u << 5);
      }
      // AMX: the tile registers (AMX-TILE, edx bit 24) and their bf16 product (AMX-BF16, bit 22),
      // with the OS saving tile config and tile data (XCR0 bits 17 and 18). Linux still makes a
      // process ask before its first tile instruction (ARCH_REQ_XCOMP_PERM, see amx_bf16_usable).
      if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
        f.amx_bf16 = f.avx512bf16 && (d & (1u << 24)) && (d & (1u << 22)) && ((xcr0 >> 17) & 3) == 3;
    }
#elif defined(__aarch64__)
    // The kernel's hwcaps say what the core implements and the kernel enables (getauxval exists
    // in glibc and in Android's bionic). Bit positions from the Linux arm64 uapi <asm/hwcap.h>,
    // spelled out so an older header or the NDK's does not decide what we can test for.
    constexpr unsigned long kHwcapAsimd = 1ul << 1, kHwcapAsimdHp = 1ul << 10, kHwcapAsimdDp = 1ul << 20;
    constexpr unsigned long kHwcap2I8mm = 1ul << 13;
    const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    f.neon = hwcap & kHwcapAsimd;
    f.fp16_arith = f.neon && (hwcap & kHwcapAsimdHp);
    f.dotprod = f.neon && (hwcap & kHwcapAsimdDp);
    f.i8mm = f.neon && (hwcap2 & kHwcap2I8mm);
#endif
    // Tests and comparisons can force a lower path: TANDEM_CPU_ISA=avx2 (the AVX2 kernels, as on a
    // CPU without AVX-512), avx512 (no VNNI: its decode takes the AVX2 int8 kernels; no AMX),
    // noamx (everything but the AMX tiles: prompts take the AVX-512 GEMMs), neon (no
    // dot product, no fp16 arithmetic: plain Advanced SIMD), dotprod (no i8mm) or portable;
    // TANDEM_CPU_PORTABLE=1 is the older spelling of portable. A name that does not lower anything
    // on this CPU changes nothing.
    if (const char* e = std::getenv("TANDEM_CPU_PORTABLE"); e && *e == '1') f = CpuFeatures{};
    if (const char* e = std::getenv("TANDEM_CPU_ISA")) {
      const std::string isa = e;
      if (isa == "portable") f = CpuFeatures{};
      if (isa == "avx2") f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512bf16 = f.amx_bf16 = false;
      if (isa == "avx512") f.avx512vnni = f.amx_bf16 = false;
      if (isa == "noamx") f.amx_bf16 = false;
      if (isa == "neon") f.fp16_arith = f.dotprod = f.i8mm = false;
      if (isa == "dotprod") f.i8mm = false;
      if (!isa.empty() && isa != "portable" && isa != "avx2" && isa != "avx512" && isa != "noamx" && isa != "neon" &&
          isa != "dotprod")
        std::fprintf(stderr, "tandem: TANDEM_CPU_ISA=%s is none of portable, avx2, avx512, noamx, neon, dotprod; ignored\n",
                     e);
    }
    return f;
  }();
  return features;
}

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(amx_bf16, "amx-bf16");
  add(neon, "neon");
  add(fp16_arith, "fp16");
  add(dotprod, "dotprod");
  add(i8mm, "i8mm");
  return s.empty() ? "portable" : s;
}

}  // namespace tandem
