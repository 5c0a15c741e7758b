// FUZZ_CHECK: like assert, but also in release builds, and it says which invariant broke (a
// crash the fuzzer keeps as an artifact).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);   \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
