#!/usr/bin/env bash
# Fuzzes tandem's readers of untrusted files: builds the `fuzz` preset (clang, libFuzzer + ASan +
# UBSan), copies each target's seed corpus to a scratch directory (the committed corpora stay as
# they are), and runs the GGUF reader for SECONDS, and the compile cache's readers (manifest.json,
# binary Program files), the JSON description readers (NPU target, SoC, plan, cost database),
# the chat template interpreter and tandem serve's request readers for half as long each, side by side. Exits non-zero when a fuzzer finds a crash; the crashing
# input is kept in build/fuzz/artifacts/.
#
# Usage: fuzz/run.sh SECONDS
# TANDEM_FUZZ_BINARY=path skips the preset build and runs that gguf_fuzz binary only.
set -euo pipefail

seconds="${1:?usage: fuzz/run.sh SECONDS}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ -n "${TANDEM_FUZZ_BINARY:-}" ]]; then
  targets=("$TANDEM_FUZZ_BINARY gguf $seconds")
else
  cmake --preset fuzz
  cmake --build --preset fuzz --target gguf_fuzz compile_cache_fuzz json_readers_fuzz jinja_fuzz openai_request_fuzz
  targets=("$root/build/fuzz/bin/gguf_fuzz gguf $seconds"
           "$root/build/fuzz/bin/compile_cache_fuzz compile_cache $(( (seconds + 1) / 2 ))"
           "$root/build/fuzz/bin/json_readers_fuzz json $(( (seconds + 1) / 2 ))"
           "$root/build/fuzz/bin/jinja_fuzz jinja $(( (seconds + 1) / 2 ))"
           "$root/build/fuzz/bin/openai_request_fuzz openai $(( (seconds + 1) / 2 ))")
fi

artifacts="$root/build/fuzz/artifacts"
mkdir -p "$artifacts"
# The targets run side by side (each fuzzer is one process on one core): the whole run takes as
# long as the longest target, not their sum. Each target's output is printed when it ends.
logs="$(mktemp -d)"
pids=()
for i in "${!targets[@]}"; do
  read -r binary seeds time <<<"${targets[$i]}"
  corpus="$logs/corpus$i"
  mkdir -p "$corpus"
  cp fuzz/corpus/"$seeds"/* "$corpus/"
  echo "== $(basename "$binary") for ${time}s"
  # A dictionary of the format's words, where the target has one (fuzz/NAME.dict).
  dict=()
  if [[ -f "fuzz/$seeds.dict" ]]; then dict=(-dict="fuzz/$seeds.dict"); fi
  # A chat template may hold 256 MiB by design (src/jinja/limits.h), and ASan's quarantine and
  # redzones come on top: its bound is the interpreter's, not a multiple of the input.
  rss=1024
  if [[ "$seeds" == jinja ]]; then rss=2048; fi
  # -max_len: the seeds are < 8 KB; room to grow without wasting time on huge inputs.
  # -rss_limit_mb: a reader must never allocate much more than a small multiple of its input
  # (the chat templates: their interpreter's memory limit).
  "$binary" "$corpus" \
    -max_total_time="$time" \
    -max_len=16384 \
    -rss_limit_mb="$rss" \
    -timeout=10 \
    -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dict[@]}" >"$logs/log$i" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then status=1; fi
  read -r binary _ <<<"${targets[$i]}"
  echo "== ${binary##*/} output"
  cat "$logs/log$i"
done
rm -rf "$logs"
exit "$status"
