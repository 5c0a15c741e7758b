#!/usr/bin/env bash
# Developer cross-check: tandem's greedy tokens against llama.cpp's (node-llama-cpp, see
# ../shared/anchors/README.md) on gen-model files of every architecture tandem reads, in f32 and
# f16, on two prompts. Prints one table row per (architecture, type, prompt) and exits non-zero
# when any differs.
#
#   tools/dev/llamacpp-agreement.sh [N_TOKENS=24] [WORKDIR=/tmp/tandem-agreement]
#   ANCHOR=/tmp/anchor (the folder with node_modules/node-llama-cpp and llamacpp-greedy.mjs)
#   TANDEM=build/release/bin/tandem
#
# The models are small (dim 256, 4 layers) with random weights: a near-tie between two logits
# would part the engines on rounding alone, so a difference is reported with its position for a
# look at the logits, not hidden.
set -uo pipefail
N=${1:-24}
WORK=${2:-/tmp/tandem-agreement}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TANDEM=${TANDEM:-$ROOT/build/release/bin/tandem}
ANCHOR=${ANCHOR:-/tmp/anchor}
GREEDY=$ROOT/tools/dev/llamacpp-greedy.mjs
[ -x "$TANDEM" ] || { echo "no tandem at $TANDEM" >&2; exit 2; }
[ -d "$ANCHOR/node_modules/node-llama-cpp" ] || { echo "no node-llama-cpp under $ANCHOR" >&2; exit 2; }
mkdir -p "$WORK"
cp "$GREEDY" "$ANCHOR/llamacpp-greedy.mjs"

PROMPTS=("1 300 301 5000 42" "1 15043 29892 920 526 366 29973 306 626 2691")
# name | gen-model arguments (small shapes; windows and LongRoPE short enough that the prompts
# plus N tokens cross them)
CASES=(
  "llama-headdim|--arch llama --dim 256 --layers 4 --heads 4 --kv-heads 2 --ffn 512 --head-dim 96"
  "qwen3|--arch qwen3 --dim 256 --layers 4 --heads 4 --kv-heads 2 --ffn 512 --head-dim 64"
  "phi3-longrope|--arch phi3 --dim 256 --layers 4 --heads 4 --kv-heads 4 --ffn 512 --ctx 512 --longrope-original-ctx 128"
  "gemma2-swa|--arch gemma2 --dim 256 --layers 4 --heads 4 --kv-heads 2 --ffn 512 --sliding-window 8"
  "gemma3-swa|--arch gemma3 --dim 256 --layers 6 --heads 4 --kv-heads 2 --ffn 512 --head-dim 64 --sliding-window 8"
)
fail=0
printf '| %-14s | %-4s | %-6s | %-8s | %s\n' architecture type prompt agree "first difference"
printf '| %-14s | %-4s | %-6s | %-8s | %s\n' -------------- ---- ------ -------- ----------------
for c in "${CASES[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  for type in f32 f16; do
    model=$WORK/$name-$type.gguf
    # shellcheck disable=SC2086
    "$TANDEM" gen-model $args --type "$type" -o "$model" >/dev/null 2>&1 || { echo "gen-model failed: $name $type" >&2; fail=1; continue; }
    for p in 0 1; do
      want=$(cd "$ANCHOR" && node llamacpp-greedy.mjs "$model" "${PROMPTS[$p]}" "$N" 2>/dev/null)
      got=$("$TANDEM" run -m "$model" --prompt-ids "${PROMPTS[$p]}" -n "$N" --temp 0 --ids 2>/dev/null | tail -1)
      if [ "$want" = "$got" ] && [ -n "$want" ]; then
        printf '| %-14s | %-4s | %-6s | %-8s |\n' "$name" "$type" "$p" "$N/$N"
      else
        fail=1
        read -ra w <<<"$want"
        read -ra g <<<"$got"
        i=0
        while [ $i -lt "$N" ] && [ "${w[$i]:-}" = "${g[$i]:-}" ]; do i=$((i + 1)); done
        printf '| %-14s | %-4s | %-6s | %-8s | token %d: llama.cpp %s, tandem %s\n' "$name" "$type" "$p" "$i/$N" "$i" "${w[$i]:-none}" "${g[$i]:-none}"
      fi
    done
  done
done
exit $fail
