#!/usr/bin/env bash
# Every partition strategy on one model, GPU (opencl) + NPU at once, one after another in one run:
# ppN / tgN and what each did (NPU graphs, modeled prepare time, copies, fallbacks), as a table
# and as JSON lines (one per strategy) in OUT.jsonl.
#
#   bench/hetero_strategies.sh MODEL.gguf [PP=300] [TG=8] [REPS=1] [OUT=hetero-strategies.jsonl]
#
# 300 is deliberately not a standard length: 256 rows fit a static NPU graph, 44 do not.
# On a machine where PoCL and the NPU model share the same CPU cores, the numbers check the
# mechanism (what runs where, what it costs to prepare), not the speedup of real hardware.
set -euo pipefail
MODEL=${1:?usage: hetero_strategies.sh MODEL.gguf [PP] [TG] [REPS] [OUT]}
PP=${2:-300} TG=${3:-8} REPS=${4:-1} OUT=${5:-hetero-strategies.jsonl}
TANDEM=${TANDEM:-$(dirname "$0")/../build/release/bin/tandem}
: > "$OUT"
printf '| %-18s | %10s | %10s | %7s | %11s | %12s | %9s |\n' strategy "pp$PP t/s" "tg$TG t/s" "graphs" "prepare ms" "bytes copied" "fallbacks"
printf '| %-18s | %10s | %10s | %7s | %11s | %12s | %9s |\n' ------------------ ---------: ---------: ------: ----------: -----------: --------:
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<<"$2" | head -1; }
for s in cpu gpu-only npu-only layer weight-centric activation-centric multi-tensor hybrid padding online-prepare npu-pipe; do
  if [ "$s" = cpu ]; then
    j=$("$TANDEM" bench -m "$MODEL" -p "$PP" -n "$TG" -r "$REPS" --json)
  else
    j=$("$TANDEM" bench -m "$MODEL" -p "$PP" -n "$TG" -r "$REPS" --json --devices opencl,npu --strategy "$s")
  fi
  echo "$j" >> "$OUT"
  copied=$(( $(field host_bytes_copied "$j") + $(field device_bytes_copied "$j") ))
  fallbacks=$(( $(field npu_prepare_fallbacks "$j") + $(field npu_run_fallbacks "$j") ))
  printf '| %-18s | %10.2f | %10.2f | %7s | %11.1f | %12s | %9s |\n' "$s" "$(field pp_tok_s "$j")" "$(field tg_tok_s "$j")" \
    "$(field npu_graphs "$j")" "$(awk -v s="$(field npu_prepare_s "$j")" 'BEGIN{print s*1000}')" "$copied" "$fallbacks"
done
