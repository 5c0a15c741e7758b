#!/usr/bin/env bash
# README command 2: set up, then build and pass every test: the unit and integration tests in
# the release build, the same tests under ASan+UBSan, and bounded fuzz runs of the readers of
# untrusted files (GGUF; the compile cache's manifest and program files).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS="${FUZZ_SECONDS:-120}"
bash scripts/install-deps.sh

echo "== release build + tests"
cmake --preset release -DTANDEM_WERROR=ON >/dev/null
cmake --build --preset release
ctest --preset release -j2

echo "== asan+ubsan build + tests"
cmake --preset asan -DTANDEM_WERROR=ON >/dev/null
cmake --build --preset asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j2

echo "== fuzz the GGUF reader (${FUZZ_SECONDS}s) and the compile cache readers"
bash fuzz/run.sh "${FUZZ_SECONDS}"
