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
for step in 1 2 3 4 5; do check "step $step/5 ran" grep -q "^\[$step/5\]" <<<"$out"; done
devices=cpu,npu
if "$TANDEM" devices 2>/dev/null | grep -q "^| opencl"; then devices=opencl,npu; fi
# Equal tokens, or tokens that part at a near-tie of the random model with the devices' logits
# within the fp16 budget of the cpu's fp32 ones there (the default job checks and fails otherwise).
check "the devices' row: $devices, the plan, equal tokens (or a near-tie)" \
  grep -qE "^\| this machine, measured +\| $devices, the solver's plan +\| +[0-9.]+ \| +[0-9.]+ \| (equal|tie at [0-9]+) " <<<"$out"
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
