#!/usr/bin/env bash
# The bad-input suite: what a careless or hostile user hands the CLI (issue 21). Every case
# asserts the exit-code class -- 0 where the input is fine, a clean error (1 or 2) with its one-line
# message where it is not, never a signal or a hang -- and each defect found once has its case here.
#
# usage: bad_input_test.sh TANDEM SHARED_DIR WORK_DIR
set -uo pipefail
TANDEM=$1 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
export XDG_CACHE_HOME="$WORK/xdg"
source "$(dirname "$0")/check_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
# Job control: background runs get SIGINT as from a terminal (a non-interactive shell would start
# them ignoring it, and tandem keeps an ignored SIGINT ignored).
set -m

# Cases by area, for the summary line.
declare -A per_area
area=""
# The areas in the order their first case came, for the summary line.
areas=()
case_in() {
  area=$1
  local a
  for a in "${areas[@]}"; do [ "$a" = "$1" ] && return; done
  areas+=("$1")
}
bad() {  # bad NAME TEXT COMMAND...: a clean one-line error containing TEXT, within 60 s
  local name=$1 text=$2; shift 2
  per_area[$area]=$(( ${per_area[$area]:-0} + 1 ))
  check "$area: $name" one_line_error "$text" timeout 60 "$@"
}
good() {  # good NAME COMMAND...: exit 0 within 60 s (stdout discarded)
  local name=$1; shift
  per_area[$area]=$(( ${per_area[$area]:-0} + 1 ))
  check "$area: $name" quiet "$@"
}
quiet() { timeout 60 "$@" >/dev/null; }
holds() {  # holds NAME CONDITION...: any other assertion of the area
  local name=$1; shift
  per_area[$area]=$(( ${per_area[$area]:-0} + 1 ))
  check "$area: $name" "$@"
}

M="$WORK/small.gguf"
"$TANDEM" gen-model --preset test-small --type q8_0 --seed 5 -o "$M" >/dev/null 2>&1 || { echo "FAILED: gen-model"; exit 1; }
RUN=(run --prompt-ids "1 2 3" -n 2 --temp 0 --ids)

# --- GGUF files: each mutant breaks one field; the error names the file (and the key, where one is
# at fault). The reader must never crash or allocate what a count claims.
case_in gguf
while read -r name field; do
  f="$WORK/mut/$name.gguf"
  bad "$name" "$name.gguf" "$TANDEM" "${RUN[@]}" -m "$f"
  if [ "$field" != "$name" ]; then
    holds "$name names $field" bash -c "\"$TANDEM\" info -m '$f' 2>&1 | grep -q -- '$field'"
  fi
done < <(python3 "$HERE/gguf_mutants.py" "$M" "$WORK/mut")
bad "missing file" "cannot open" "$TANDEM" info -m "$WORK/none.gguf"

# --- Special files where a file is expected: refused at once, never read forever or blocked on.
case_in "special files"
mkfifo "$WORK/fifo.gguf" "$WORK/fifo.json"
mkdir -p "$WORK/adir"
bad "model is a FIFO" "not a regular file" "$TANDEM" info -m "$WORK/fifo.gguf"
bad "model is a directory" "not a regular file" "$TANDEM" info -m "$WORK/adir"
bad "model is /dev/zero" "not a regular file" "$TANDEM" info -m /dev/zero
bad "NPU target is a FIFO" "not a regular file" "$TANDEM" buckets --target "$WORK/fifo.json"
bad "plan is a FIFO" "not a regular file" "$TANDEM" "${RUN[@]}" -m "$M" --devices cpu,npu --plan "$WORK/fifo.json"
bad "cost DB is /dev/zero" "not a regular file" "$TANDEM" plan --costdb /dev/zero --model-preset test-small

# --- Numeric options: every one has a documented range (--help), checked with a one-line error.
case_in arguments
bad "--temp -1" "--temp" "$TANDEM" "${RUN[@]}" -m "$M" --temp -1
bad "--top-p 2" "--top-p" "$TANDEM" "${RUN[@]}" -m "$M" --top-p 2
bad "--top-p 0" "--top-p" "$TANDEM" "${RUN[@]}" -m "$M" --top-p 0
bad "--top-k -5" "--top-k" "$TANDEM" "${RUN[@]}" -m "$M" --top-k -5
bad "--min-p 1.5" "--min-p" "$TANDEM" "${RUN[@]}" -m "$M" --min-p 1.5
bad "--repeat-penalty 0" "--repeat-penalty" "$TANDEM" "${RUN[@]}" -m "$M" --repeat-penalty 0
bad "-n -1" "--n-predict" "$TANDEM" run -m "$M" --prompt-ids "1 2" -n -1
bad "-t 0" "--threads" "$TANDEM" "${RUN[@]}" -m "$M" -t 0
bad "-t 100000" "--threads" "$TANDEM" "${RUN[@]}" -m "$M" -t 100000
bad "-c -1" "--ctx-size" "$TANDEM" "${RUN[@]}" -m "$M" -c -1
bad "-c 2^31" "--ctx-size" "$TANDEM" "${RUN[@]}" -m "$M" -c 2147483648
bad "-n text" "--n-predict" "$TANDEM" run -m "$M" --prompt-ids "1 2" -n many
bad "bench -r 0" "--repetitions" "$TANDEM" bench -m "$M" -r 0
bad "bench -d -5" "--n-depth" "$TANDEM" bench -m "$M" -d -5
bad "gen-model --dim 0" "--dim" "$TANDEM" gen-model --arch llama --dim 0 --layers 1 --heads 1 --ffn 8 -o "$WORK/x.gguf"
bad "simulate --ratio 2" "--ratio" "$TANDEM" simulate --model-preset test-small --ratio 2
bad "prompt id past the vocabulary" "" "$TANDEM" run -m "$M" --prompt-ids "1 99999999" -n 1
bad "--seed -1" "--seed" "$TANDEM" "${RUN[@]}" -m "$M" --seed -1
bad "--cache-type-k q3" "--cache-type-k" "$TANDEM" "${RUN[@]}" -m "$M" -ctk q3
# Said, not silent: -c past the trained context warns; -n past the context says where it stopped.
warned=$("$TANDEM" "${RUN[@]}" -m "$M" -c 1024 2>&1 >/dev/null)
holds "-c past the trained context warns" grep -q "past the 512 tokens the model was trained on" <<<"$warned"
full_err=$("$TANDEM" run -m "$M" --prompt-ids "1 2" -n 1000000000 -c 32 --temp 0 --ids 2>&1 >"$WORK/full.out"); full_rc=$?
holds "-n past the context: exit 0" [ "$full_rc" -eq 0 ]
holds "-n past the context: 30 tokens" [ "$(wc -w <"$WORK/full.out")" -eq 30 ]
holds "-n past the context: said" grep -q "stopped after 30 of the 1000000000 tokens -n asked for: the context of 32 tokens is full" <<<"$full_err"

# --- JSON descriptions: an NPU target with one field broken; the error names the file, the field
# and the value. Integer fields are range-checked before any cast.
case_in json
T0="$(dirname "$HERE")/../data/npu/hexagon-v75.json"
target_with() {  # target_with NAME PYTHON-EXPR-ON-j
  python3 - "$T0" "$WORK/t-$1.json" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(j))
PY
}
for v in 2147483648 1e12 -1 0 1.5 '"32"' null 257; do
  target_with "tile-$v" "j['matrix']['tile_dim']['value'] = json.loads('$v')"
  bad "tile_dim $v" "matrix.tile_dim" "$TANDEM" buckets --target "$WORK/t-tile-$v.json"
done
target_with "channels-huge" "j['dma']['channels']['value'] = 2**40"
bad "dma.channels 2^40" "dma.channels" "$TANDEM" buckets --target "$WORK/t-channels-huge.json"
target_with "tcm-huge" "j['tcm']['bytes']['value'] = 2**40"
bad "tcm.bytes 2^40" "tcm.bytes" "$TANDEM" buckets --target "$WORK/t-tcm-huge.json"
target_with "no-source" "del j['matrix']['arrays']['source']"
bad "a number without its source" "matrix.arrays" "$TANDEM" buckets --target "$WORK/t-no-source.json"
target_with "unknown" "j['matrix']['tile_dimm'] = j['matrix']['tile_dim']"
bad "unknown field" "tile_dimm" "$TANDEM" buckets --target "$WORK/t-unknown.json"
target_with "missing" "del j['dma']"
bad "missing section" "dma" "$TANDEM" buckets --target "$WORK/t-missing.json"
printf '{"name": "x", "matrix": ' >"$WORK/t-cut.json"
bad "cut short" "not valid JSON" "$TANDEM" buckets --target "$WORK/t-cut.json"
printf '%*s' 200000 '' | tr ' ' '[' >"$WORK/t-deep.json"
bad "nested 200000 deep" "t-deep.json" "$TANDEM" buckets --target "$WORK/t-deep.json"
echo '{"format": "tandem-plan-1", "source": "x", "sync": "fast", "standard_lengths": [0], "ops": []}' >"$WORK/p-len.json"
bad "plan standard length 0" "standard_lengths[0]" "$TANDEM" simulate --model-preset test-small --plan "$WORK/p-len.json"
echo '[1, 2' >"$WORK/cdb.json"
bad "cost DB cut short" "cdb.json" "$TANDEM" plan --costdb "$WORK/cdb.json" --model-preset test-small

# --- Outputs: written atomically, and only as new or regular files.
case_in outputs
bad "gen-model -o /dev/full" "/dev/full: is a character device" "$TANDEM" gen-model --preset test-small -o /dev/full
holds "/dev/full is still a device" [ -c /dev/full ]
bad "gen-model -o a directory" "is a directory" "$TANDEM" gen-model --preset test-small -o "$WORK/adir"
bad "gen-model -o a FIFO" "is a FIFO" "$TANDEM" gen-model --preset test-small -o "$WORK/fifo.gguf"
bad "gen-model into a missing folder" "cannot create" "$TANDEM" gen-model --preset test-small -o "$WORK/nowhere/x.gguf"
bad "quantize over /dev/null" "/dev/null" "$TANDEM" quantize "$M" /dev/null q4_0
bad "plan -o /dev/full" "/dev/full" "$TANDEM" plan --soc sd8gen3 --model-preset test-small --max-len 4 -o /dev/full
cp "$M" "$WORK/over.gguf"
good "gen-model over a regular file" "$TANDEM" gen-model --preset test-small --type q4_0 -o "$WORK/over.gguf"
holds "no temporary left beside it" bash -c "! ls '$WORK' | grep -q partial"
# Shape options beside --preset replace its values (they were silently ignored: a 15 GB phi3-mini).
good "gen-model --preset with shape options" "$TANDEM" gen-model --preset phi3-mini --dim 64 --layers 1 --heads 2 \
  --kv-heads 2 --ffn 64 --type q8_0 -o "$WORK/phi3-small.gguf"
holds "the options replace the preset's shape, its vocabulary stays" \
  bash -c "'$TANDEM' info -m '$WORK/phi3-small.gguf' | grep -q 'dim 64, layers 1, heads 2 (kv 2, head dim 32), ffn 64, vocab 32064'"
bad "gen-model --preset, --heads its kv heads do not divide" "--kv-heads: 32 does not divide --heads 2" \
  "$TANDEM" gen-model --preset phi3-mini --dim 64 --layers 1 --heads 2 --ffn 64 -o "$WORK/phi3-bad.gguf"

# --- The compile cache: what a run reads from a folder anyone could have written. Refused means
# refused: the run fails, it does not quietly run that part elsewhere.
case_in "compile cache"
# (pipefail would make a pipe from the failing probe false: read its output first.)
compile_probe=$("$TANDEM" compile 2>&1 || true)
has_compiler=1
grep -q "without the MLIR compiler" <<<"$compile_probe" && has_compiler=0
if [ "$has_compiler" -eq 0 ]; then
  echo "bad_input: compile cache cases skipped (built without the MLIR compiler)"
else
  bad "buckets past the context" "context of 512" "$TANDEM" compile -m "$M" --buckets 128,1024 -o "$WORK/c-big"
  holds "no cache left behind" none_exist "$WORK/c-big/manifest.json" "$WORK/c-big/programs"
  C="$WORK/cache"
  # head_major for both phases: every KV append is a compiled program (no warning line).
  "$TANDEM" compile -m "$M" --buckets 4 --kv-layout head_major --no-validate -o "$C" >/dev/null 2>&1
  NPU=(run -m "$M" --devices npu --prompt-ids "1 2 3 4" -n 2 --temp 0 --ids)
  good "the cache runs" "$TANDEM" "${NPU[@]}" --npu-cache "$C"
  prog=$(ls "$C"/programs/mm*.tnpu | head -1)
  tamper() { rm -rf "$WORK/ct" && cp -r "$C" "$WORK/ct" && p="$WORK/ct/programs/$(basename "$prog")"; }
  tamper; printf '\x01' | dd of="$p" bs=1 seek=60 conv=notrunc 2>/dev/null
  bad "a changed byte" "refusing to run a modified program" "$TANDEM" "${NPU[@]}" --npu-cache "$WORK/ct"
  tamper; truncate -s -1 "$p"
  bad "a program cut short" "refusing" "$TANDEM" "${NPU[@]}" --npu-cache "$WORK/ct"
  tamper; rm "$p"; ln -s /dev/zero "$p"
  bad "a program that is /dev/zero" "not a regular file" "$TANDEM" "${NPU[@]}" --npu-cache "$WORK/ct"
  tamper; rm "$p"; mkfifo "$p"
  bad "a program that is a FIFO" "not a regular file" "$TANDEM" "${NPU[@]}" --npu-cache "$WORK/ct"
  tamper; rm "$WORK/ct/manifest.json"; mkfifo "$WORK/ct/manifest.json"
  bad "a manifest that is a FIFO" "not a regular file" "$TANDEM" "${NPU[@]}" --npu-cache "$WORK/ct"
fi

# --- A model file changed on disk while a run has it mapped: a clean error, not SIGBUS; with
# --no-mmap the run does not depend on the file at all.
case_in "file changed in use"
long_run() {  # long_run OUT ERR ARGS...: a long generation in the background; waits for its first token
  # Text, not --ids: each token is written as it comes, so OUT fills once generation has begun.
  local out=$1 err=$2; shift 2
  # Emptied first: a file left non-empty by an earlier run would pass the wait below before the new
  # run truncates it (the redirection happens in the child), and the signal would then land while
  # the run is still loading -- before it handles signals (seen under ASan: killed, output empty).
  : >"$out"
  "$TANDEM" run --prompt-ids "1 2 3" -n 1000000 -c 1000100 --temp 0 --ignore-eos -t 1 "$@" >"$out" 2>"$err" &
  pid=$!
  for _ in $(seq 1 600); do [ -s "$out" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.05; done
  [ -s "$out" ] || echo "  note: no token from the run in $out after 30 s (still running: $(kill -0 $pid 2>/dev/null && echo yes || echo no))"
}
finish() {  # finish: the background run's exit status; one that has not ended in 60 s is killed (137)
  timeout 60 tail --pid=$pid -f /dev/null || kill -KILL $pid 2>/dev/null
  wait $pid
}
# A background run's cases say nothing but their names when they fail; these failures come under
# load and rarely, so the run's exit status and the end of its stderr are printed beside them.
said_if_failed() {  # said_if_failed FAILED_BEFORE ERR_FILE
  [ "$failed" -gt "$1" ] || return 0
  echo "  rc=$rc; the run's stderr ends:"
  tail -n 5 "$2" | sed 's/^/    /'
}
cp "$M" "$WORK/victim.gguf"
long_run "$WORK/v.out" "$WORK/v.err" -m "$WORK/victim.gguf" -v
sleep 0.5; : >"$WORK/victim.gguf"
finish; rc=$?
before=$failed
holds "truncated while mapped: exit 1" [ "$rc" -eq 1 ]
holds "truncated while mapped: said" grep -q "victim.gguf: the file changed on disk while tandem was using it" "$WORK/v.err"
said_if_failed $before "$WORK/v.err"
cp "$M" "$WORK/victim2.gguf"
long_run "$WORK/n.out" "$WORK/n.err" -m "$WORK/victim2.gguf" --no-mmap
sleep 0.5; : >"$WORK/victim2.gguf"; sleep 0.5
kill -INT $pid; finish; rc=$?
before=$failed
holds "--no-mmap: unaffected, stopped by Ctrl-C (130)" [ "$rc" -eq 130 ]
said_if_failed $before "$WORK/n.err"
holds "run -v says the file is mapped" bash -c "\"$TANDEM\" ${RUN[*]@Q} -m '$M' -v 2>&1 >/dev/null | grep -q '^model file: mapped'"
holds "run -v says --no-mmap never maps it" bash -c "\"$TANDEM\" ${RUN[*]@Q} -m '$M' -v --no-mmap 2>&1 >/dev/null | grep -q '^model file: read into huge pages (never mapped again)'"

# --- Signals: run flushes what it generated and exits 130/143; writers leave nothing half-done.
case_in signals
long_run "$WORK/s.out" "$WORK/s.err" -m "$M"
sleep 0.3; kill -INT $pid; finish; rc=$?
before=$failed
holds "run SIGINT: exit 130" [ "$rc" -eq 130 ]
# The output ends with run's closing newline: it stopped at a token boundary and finished writing
# (killed by the signal, it would end mid-stream).
ends_cleanly() { [ -s "$1" ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }
holds "run SIGINT: the tokens so far printed, whole" ends_cleanly "$WORK/s.out"
holds "run SIGINT: said" grep -q "interrupted (SIGINT)" "$WORK/s.err"
said_if_failed $before "$WORK/s.err"
long_run "$WORK/s.out" "$WORK/s.err" -m "$M"
sleep 0.3; kill -TERM $pid; finish; rc=$?
before=$failed
holds "run SIGTERM: exit 143" [ "$rc" -eq 143 ]
holds "run SIGTERM: the tokens so far printed, whole" ends_cleanly "$WORK/s.out"
said_if_failed $before "$WORK/s.err"
mkdir -p "$WORK/gm"
"$TANDEM" gen-model --preset tinyllama-1.1b --type q4_0 -t 1 -o "$WORK/gm/big.gguf" >/dev/null 2>"$WORK/gm.err" &
pid=$!
# Signalled once its temporary file exists (it is writing), not after a fixed time: a slow start
# (a sanitizer build on a busy machine) would otherwise meet the signal before its handler.
for _ in $(seq 1 600); do [ -n "$(ls -A "$WORK/gm")" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.05; done
kill -INT $pid; finish; rc=$?
before=$failed
holds "gen-model SIGINT: exit 130" [ "$rc" -eq 130 ]
holds "gen-model SIGINT: no file, no temporary" [ -z "$(ls -A "$WORK/gm")" ]
said_if_failed $before "$WORK/gm.err"

if [ "$has_compiler" -eq 1 ]; then
  # compile stopped between variants: no programs/ left without a manifest.
  "$TANDEM" compile -m "$M" --buckets 4,8,16,32,64,128,256 --power-levels max,1.5W,1W -o "$WORK/c-int" >/dev/null 2>"$WORK/c-int.err" &
  pid=$!
  for _ in $(seq 1 400); do [ -d "$WORK/c-int/programs" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.05; done
  kill -INT $pid; finish; rc=$?
  before=$failed
  holds "compile SIGINT: exit 130" [ "$rc" -eq 130 ]
  holds "compile SIGINT: no programs without a manifest" none_exist "$WORK/c-int/programs" "$WORK/c-int/manifest.json"
  said_if_failed $before "$WORK/c-int.err"
fi

# Areas of their own (issue 56 on): each file adds its cases with case_in/bad/good/holds.
for part in "$HERE"/bad_input_*.sh; do
  [ -e "$part" ] && [ "$part" != "$HERE/bad_input_test.sh" ] || continue
  source "$part"
done

summary=""
for a in "${areas[@]}"; do
  summary+="${summary:+, }$a ${per_area[$a]:-0}"
done
echo "bad_input: $passed passed, $failed failed ($summary)"
[ "$failed" -eq 0 ]
