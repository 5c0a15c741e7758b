#!/usr/bin/env bash
# Fuzzes the GGUF reader for SECONDS: builds the `fuzz` preset (clang, libFuzzer + ASan + UBSan),
# copies the seed corpus to a scratch directory (the committed corpus stays as it is), and runs.
# Exits non-zero when the fuzzer finds a crash; the crashing input is kept in build/fuzz/artifacts/.
#
# Usage: fuzz/run.sh SECONDS
# TANDEM_FUZZ_BINARY=path skips the preset build and runs that gguf_fuzz binary instead.
set -euo pipefail

seconds="${1:?usage: fuzz/run.sh SECONDS}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

binary="${TANDEM_FUZZ_BINARY:-}"
if [[ -z "$binary" ]]; then
  cmake --preset fuzz
  cmake --build --preset fuzz --target gguf_fuzz
  binary="$root/build/fuzz/bin/gguf_fuzz"
fi

corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
cp fuzz/corpus/gguf/* "$corpus/"
artifacts="$root/build/fuzz/artifacts"
mkdir -p "$artifacts"

# -max_len: the seeds are < 8 KB; room to grow without wasting time on huge inputs.
# -rss_limit_mb: the reader must never allocate much more than a small multiple of its input.
"$binary" "$corpus" \
  -max_total_time="$seconds" \
  -max_len=16384 \
  -rss_limit_mb=1024 \
  -timeout=10 \
  -print_final_stats=1 \
  -artifact_prefix="$artifacts/"
