#!/usr/bin/env bash
# Start-up against llama.cpp: wall time from process start to the first generated token (a
# 4-token prompt, 1 token, then exit) and peak resident memory, measured by /usr/bin/time for
# tandem run and llama.cpp's llama-completion on the same GGUF, threads and context, in
# alternating rounds. Prints medians, spreads and ratios (tandem / llama.cpp; lower is better).
# The file is read once before the rounds so both start from a warm page cache.
#
#   bench/startup-llamacpp.sh [-t 2] [-c 512] [-r 5] MODEL.gguf...
#   LLAMA_COMPLETION=path (default /tmp/llcpp/build/bin/llama-completion; build it with
#     cmake --build /tmp/llcpp/build --target llama-completion)
#   TANDEM=path (default build/release/bin/tandem)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
THREADS=2 CTX=512 ROUNDS=5
while getopts "t:c:r:" opt; do
  case $opt in
    t) THREADS=$OPTARG ;; c) CTX=$OPTARG ;; r) ROUNDS=$OPTARG ;;
    *) usage 2 12 "$0" ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage 2 12 "$0"
TANDEM=${TANDEM:-$(dirname "$0")/../build/release/bin/tandem}
LLAMA=${LLAMA_COMPLETION:-/tmp/llcpp/build/bin/llama-completion}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "startup-llamacpp: needs GNU time at $TIME (apt-get install time)" >&2; exit 1; }
[ -x "$TANDEM" ] || { echo "startup-llamacpp: no tandem at $TANDEM (build it first)" >&2; exit 1; }
HAVE_LLAMA=$(have_tool llama-completion "$LLAMA" startup-llamacpp)
PROMPT="The capital of France"  # 4 tokens after BOS in the Llama vocabulary

# "seconds peak_kB" of one run of the command (its output dropped; a failure stops the script)
measure() {
  local out
  out=$("$TIME" -f "TIME %e %M" "$@" 2>&1 >/dev/null) || { echo "startup-llamacpp: failed: $*" >&2; echo "$out" | tail -5 >&2; exit 1; }
  sed -n 's/^TIME \([0-9.]*\) \([0-9]*\)$/\1 \2/p' <<<"$out" | tail -1
}

printf "| %-28s | %-9s | %-24s | %-24s | %5s |\n" model measure "llama.cpp median (range)" "tandem median (range)" ratio
printf "| %s | %s | %s | %s | %s |\n" "$(printf -- '-%.0s' {1..28})" "---------" "------------------------" "------------------------" "----:"
for model in "$@"; do
  cat "$model" > /dev/null  # warm the page cache for both engines
  lt="" lm="" tt="" tm=""
  for r in $(seq 1 "$ROUNDS"); do
    if [ $HAVE_LLAMA = 1 ]; then
      read -r s kb <<<"$(measure "$LLAMA" -m "$model" -p "$PROMPT" -n 1 -t "$THREADS" -c "$CTX" -no-cnv --temp 0)"
      lt+="$s " lm+="$((kb / 1024)) "
    fi
    read -r s kb <<<"$(measure "$TANDEM" run -m "$model" -p "$PROMPT" -n 1 -t "$THREADS" -c "$CTX" --temp 0)"
    tt+="$s " tm+="$((kb / 1024)) "
  done
  for what in time rss; do
    if [ $what = time ]; then l=$lt t=$tt label="wall s"; else l=$lm t=$tm label="peak MiB"; fi
    read -r lmed lmin lmax <<<"$(tr ' ' '\n' <<<"$l" | grep . | stats)"
    read -r tmed tmin tmax <<<"$(tr ' ' '\n' <<<"$t" | grep . | stats)"
    printf "| %-28s | %-9s | %-24s | %-24s | %5s |\n" "$(basename "$model")" "$label" "$lmed ($lmin-$lmax)" \
      "$tmed ($tmin-$tmax)" "$(ratio "$tmed" "$lmed")"
  done
done
