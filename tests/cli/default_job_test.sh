#!/usr/bin/env bash
# README command 1's job (`tandem` with no arguments) end to end on a fresh cache: the cpu run and
# bench, the same prompt on this machine's devices with the solver's plan (greedy tokens equal,
# the placement summary, a Chrome trace with a track per device), the modeled Snapdragon 8 Gen 3
# prediction, and the table of the three.
# usage: default_job_test.sh TANDEM WORK_DIR
set -uo pipefail
TANDEM=$1 WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK"
export XDG_CACHE_HOME="$WORK/xdg"
source "$(dirname "$0")/check_lib.sh"
"$TANDEM" >"$WORK/out.txt" 2>"$WORK/err.txt"
rc=$?
check "the default job succeeds" [ "$rc" -eq 0 ]
out=$(cat "$WORK/out.txt")
for step in 1 2 3 4 5 6; do check "step $step/6 ran" grep -q "^\[$step/6\]" <<<"$out"; done
devices=cpu,npu
if "$TANDEM" devices 2>/dev/null | grep -q "^| opencl"; then devices=opencl,npu; fi
# Equal tokens, or tokens that part at a near-tie of the random model with the devices' logits
# within the fp16 budget of the cpu's fp32 ones there (the default job checks and fails otherwise).
check "the devices' row: $devices, the plan, equal tokens (or a near-tie)" \
  grep -qE "^\| this machine, measured +\| $devices, the solver's plan +\| +[0-9.]+ \| +[0-9.]+ \| (equal|tie at [0-9]+) " <<<"$out"
# Where the Hexagon toolchain is (CI requires it), the DSP's row: its first tokens equal the cpu's
# (or part at a near-tie within the int8 budget), its speed marked emulated.
if "$TANDEM" devices 2>/dev/null | grep -qE "^\| hexagon +\| npu +\| yes"; then
  check "the Hexagon row: equal tokens (or a near-tie), emulated" \
    grep -qE "^\| npu: Hexagon v66 HVX code under qemu-hexagon +\| (cpu|opencl),hexagon, weight-centric \(emulated\) +\| +[0-9.]+ \| +[0-9.]+ \| (equal|tie at [0-9]+) " <<<"$out"
elif [ "${TANDEM_REQUIRE_HEXAGON:-}" = 1 ]; then
  check "the Hexagon DSP is required here (TANDEM_REQUIRE_HEXAGON=1) but tandem devices lists none" false
else
  check "without the toolchain the Hexagon step says why" grep -q "^\[5/6\] the Hexagon DSP: skipped, hexagon toolchain not found" <<<"$out"
fi
check "the prediction's row" grep -qE "^\| Snapdragon 8 Gen 3 \(sd8gen3\), predicted +\| gpu,npu, plan \(solved for sd8gen3\) +\| +[1-9][0-9.]* \| +[1-9][0-9.]* \|" <<<"$out"
check "the placement summary names the plan" grep -q "^plan  *the solver's, for " <<<"$out"
check "the profile is cached" bash -c "ls '$XDG_CACHE_HOME/tandem/profiles/'*.json >/dev/null"
trace="$XDG_CACHE_HOME/tandem/default-demo-trace.json"
check "the trace is named" grep -q "timeline: $trace" <<<"$out"
check "the trace has kernels on both devices" python3 -c "
import json, sys
t = json.load(open('$trace'))
events = t['traceEvents'] if isinstance(t, dict) else t
names = {e['tid']: e['args']['name'] for e in events if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
busy = {names.get(e['tid']) for e in events if e.get('ph') == 'X' and e.get('cat') == 'kernel'}
want = set('$devices'.split(','))
sys.exit(0 if want <= busy else 'tracks with kernels: %s, want %s' % (busy, want))"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] || { echo "stdout:"; cat "$WORK/out.txt"; echo "stderr:"; cat "$WORK/err.txt"; }
[ "$failed" -eq 0 ]
