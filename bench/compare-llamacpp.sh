#!/usr/bin/env bash
# tandem against native llama-bench on the same GGUF files, threads, depths and KV cache type, in
# alternating rounds (llama-bench, tandem, llama-bench, ...) so a noisy neighbour hits both alike.
# Prints one table of medians, spreads (min-max over the rounds) and ratios (tandem / llama.cpp
# medians), and writes every single measurement as JSON lines to OUT.
#
#   bench/compare-llamacpp.sh [options] MODEL.gguf...
#     -t "1 2"     thread counts                      -p 512   prompt tokens (ppN; 0 skips)
#     -n 128       generated tokens (tgN; 0 skips)    -d "0"   depths: tokens already in the KV cache
#     -r 5         rounds per engine (>= 5 for claims) -k f16   llama-bench's KV cache type (-ctk/-ctv)
#     -o FILE      JSON lines (default compare-llamacpp.jsonl)
#   LLAMA_BENCH=path (default /tmp/llcpp/build/bin/llama-bench, from ../shared/anchors/build-llamacpp.sh)
#   TANDEM=path      (default build/release/bin/tandem)
#
# Without llama-bench the tandem columns are still measured and the ratios read "-". The cache
# type goes to tandem too where its bench takes -ctk/-ctv; otherwise tandem runs its own cache
# (an fp32 KV before those flags landed) and the table says which.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
THREADS="1 2" PP=512 TG=128 DEPTHS="0" ROUNDS=5 CACHE=f16 OUT=compare-llamacpp.jsonl
while getopts "t:p:n:d:r:k:o:" opt; do
  case $opt in
    t) THREADS=$OPTARG ;; p) PP=$OPTARG ;; n) TG=$OPTARG ;; d) DEPTHS=$OPTARG ;;
    r) ROUNDS=$OPTARG ;; k) CACHE=$OPTARG ;; o) OUT=$OPTARG ;;
    *) usage 2 17 "$0" ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage 2 17 "$0"
TANDEM=${TANDEM:-$(dirname "$0")/../build/release/bin/tandem}
LLAMA_BENCH=${LLAMA_BENCH:-/tmp/llcpp/build/bin/llama-bench}
[ -x "$TANDEM" ] || { echo "compare-llamacpp: no tandem at $TANDEM (build it first)" >&2; exit 1; }
HAVE_LLAMA=$(have_tool llama-bench "$LLAMA_BENCH" compare-llamacpp)
: > "$OUT"
TANDEM_CACHE=()
TANDEM_KV=f32
if "$TANDEM" bench --help 2>/dev/null | grep -q -- "--cache-type-k"; then TANDEM_CACHE=(-ctk "$CACHE" -ctv "$CACHE"); TANDEM_KV=$CACHE; fi

field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<<"$2" | head -1; }
# llama-bench -o json: one object per test; pp has n_gen 0, tg has n_prompt 0.
llama_rates() {  # -> "PP_TS TG_TS" (0 where a test was skipped)
  awk '/"n_prompt"/{gsub(/[^0-9]/,"");p=$0} /"n_gen"/{gsub(/[^0-9]/,"");g=$0}
       /"avg_ts"/{gsub(/[^0-9.]/,""); if (g==0) pp=$0; else tg=$0}
       END{printf "%s %s\n", (pp==""?0:pp), (tg==""?0:tg)}' <<<"$1"
}

declare -A VALS
rows=()
for model in "$@"; do
  for t in $THREADS; do
    for d in $DEPTHS; do
      key="$model|$t|$d"; rows+=("$key")
      for r in $(seq 1 "$ROUNDS"); do
        if [ $HAVE_LLAMA = 1 ]; then
          j=$("$LLAMA_BENCH" -m "$model" -p "$PP" -n "$TG" -t "$t" -d "$d" -ctk "$CACHE" -ctv "$CACHE" -r 1 -o json 2>/dev/null)
          read -r lpp ltg <<<"$(llama_rates "$j")"
          VALS["$key|llama|pp"]+="$lpp "; VALS["$key|llama|tg"]+="$ltg "
          echo "{\"engine\":\"llama.cpp\",\"model\":\"$model\",\"threads\":$t,\"depth\":$d,\"round\":$r,\"pp_tok_s\":$lpp,\"tg_tok_s\":$ltg}" >> "$OUT"
        fi
        j=$("$TANDEM" bench -m "$model" -p "$PP" -n "$TG" -t "$t" -d "$d" "${TANDEM_CACHE[@]}" -r 1 --json)
        tpp=$(field pp_tok_s "$j"); ttg=$(field tg_tok_s "$j")
        VALS["$key|tandem|pp"]+="$tpp "; VALS["$key|tandem|tg"]+="$ttg "
        echo "{\"engine\":\"tandem\",\"model\":\"$model\",\"threads\":$t,\"depth\":$d,\"round\":$r,\"pp_tok_s\":$tpp,\"tg_tok_s\":$ttg}" >> "$OUT"
        printf '.' >&2
      done
    done
  done
done
echo >&2

echo "KV cache: llama.cpp $CACHE, tandem $TANDEM_KV; medians of $ROUNDS alternating rounds"
printf '| %-28s | %3s | %5s | %-6s | %22s | %22s | %6s |\n' model thr depth test "llama-bench median (min-max)" "tandem median (min-max)" ratio
printf '| %-28s | %3s | %5s | %-6s | %22s | %22s | %6s |\n' ---------------------------- --: ----: ------ ---------------------: ---------------------: -----:
for key in "${rows[@]}"; do
  IFS='|' read -r model t d <<<"$key"
  for test in pp tg; do
    n=$([ $test = pp ] && echo "$PP" || echo "$TG"); [ "$n" -gt 0 ] || continue
    read -r lm llo lhi <<<"$(tr ' ' '\n' <<<"${VALS[$key|llama|$test]:-}" | grep . | stats)"
    read -r tm tlo thi <<<"$(tr ' ' '\n' <<<"${VALS[$key|tandem|$test]:-}" | grep . | stats)"
    ratio=$(ratio "$tm" "$lm")
    printf '| %-28s | %3s | %5s | %-6s | %22s | %22s | %6s |\n' "$(basename "$model")" "$t" "$d" "$test$n" \
      "$lm ($llo-$lhi)" "$tm ($tlo-$thi)" "$ratio"
  done
done
