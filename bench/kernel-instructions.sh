#!/usr/bin/env bash
# Instructions per pass of each aarch64 kernel path, counted under qemu (no phone here, and qemu's
# time means nothing): kernel_pass runs a matmul (or an attention product) a few times between two
# marker calls, qemu -singlestep logs every guest instruction it executes, and the instructions
# between the markers, per pass and per weight byte, go into one Markdown table per CPU model
# (cortex-a53: plain NEON; neoverse-n1: dotprod and fp16 arithmetic; max: i8mm too). A sanity
# check of the paths (fewer instructions where SDOT / SMMLA / fp16 should save them), not a
# speed claim.
#
#   bench/kernel-instructions.sh [KERNEL_PASS] [--json FILE]
#
# Needs: the arm64-release build (kernel_pass) and qemu-user. About 4 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/arm64-release/bin/kernel_pass
JSON=""
while [ $# -gt 0 ]; do
  case $1 in
    --json) JSON=$2; shift 2 ;;
    *) BIN=$1; shift ;;
  esac
done
[ -x "$BIN" ] || { echo "kernel-instructions: no $BIN (cmake --build --preset arm64-release --target kernel_pass)" >&2; exit 2; }
command -v qemu-aarch64 >/dev/null || { echo "kernel-instructions: qemu-aarch64 missing (apt-get install qemu-user)" >&2; exit 2; }
CPUS=(cortex-a53 neoverse-n1 max)
PASSES=4
# One configuration: "label|kernel_pass arguments|weight bytes per pass".
configs=()
for t in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 iq4_nl q2_k q3_k q4_k q5_k q6_k iq4_xs; do
  configs+=("decode m=1 $t|--type $t --rows 64 --cols 1024 -m 1")
done
for t in q4_0 q8_0 q4_k; do configs+=("prefill m=16 $t|--type $t --rows 64 --cols 1024 -m 16"); done
for op in kv-scores kv-sums; do
  configs+=("$op f16 cache m=8|--op $op --rows 256 --cols 128 -m 8")
  configs+=("$op f16 cache m=8, fp32|--op $op --rows 256 --cols 128 -m 8 --kv-fp32")
done

# Instructions between the markers / passes, and the run's JSON line.
count() {  # cpu, args...
  local cpu=$1; shift
  QEMU_CPU=$cpu qemu-aarch64 -singlestep -d nochain,exec -D /dev/stdout "$BIN" "$@" --passes $PASSES --json |
    awk -v passes=$PASSES '
      /^Trace/ { if ($NF == "kernel_pass_begin") on = 1; else if ($NF == "kernel_pass_end") on = 0; else if (on) n++; next }
      /^\{/ { json = $0 }
      END { printf "%d %s\n", n / passes, json }'
}

[ -n "$JSON" ] && : > "$JSON"
printf "| kernel | weight bytes |"; for c in "${CPUS[@]}"; do printf " %s: instr/pass | instr/byte |" "$c"; done; echo
printf "|---|--:|"; for c in "${CPUS[@]}"; do printf -- "--:|--:|"; done; echo
total=${#configs[@]} i=0
for cfg in "${configs[@]}"; do
  label=${cfg%%|*} args=${cfg#*|}
  line="| $label |"
  bytes=""
  for cpu in "${CPUS[@]}"; do
    # shellcheck disable=SC2086
    read -r n json < <(count "$cpu" $args)
    b=$(sed -E 's/.*"weight_bytes":([0-9]+).*/\1/' <<<"$json")
    path=$(sed -E 's/.*"path":"([^"]*)".*/\1/' <<<"$json")
    [ -z "$bytes" ] && { bytes=$b; line="$line $b |"; }
    line="$line $n | $(awk -v n="$n" -v b="$b" 'BEGIN { printf "%.3f", n / b }') ($path) |"
    [ -n "$JSON" ] && echo "{\"cpu\":\"$cpu\",\"instructions_per_pass\":$n,\"run\":$json}" >> "$JSON"
  done
  echo "$line"
  i=$((i + 1)); printf "\r  %d/%d configurations" "$i" "$total" >&2
done
echo >&2
