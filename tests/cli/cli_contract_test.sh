#!/usr/bin/env bash
# usage: cli_contract_test.sh TANDEM SHARED_DIR WORK_DIR
set -uo pipefail
TANDEM=$1 SHARED=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
# Device profiles (the solver's default plan) and the default model are cached here, not in ~.
export XDG_CACHE_HOME="$WORK/xdg"
source "$(dirname "$0")/check_lib.sh"

M="$WORK/small.gguf"
check "gen-model preset" "$TANDEM" gen-model --preset test-small --type q8_0 --seed 3 -o "$M"
check "gen-model custom qwen2" "$TANDEM" gen-model --arch qwen2 --dim 64 --layers 1 --heads 4 --kv-heads 2 --ffn 96 \
  --vocab "$SHARED/testdata/vocab/ggml-vocab-qwen2.gguf" --type q4_0 -o "$WORK/qwen.gguf"

# run --ids: greedy output is deterministic, N ids, all inside the vocabulary.
ids1=$("$TANDEM" run -m "$M" --prompt-ids "1 2 3" -n 8 --temp 0 --ids -t 1)
ids2=$("$TANDEM" run -m "$M" --prompt-ids "1 2 3" -n 8 --temp 0 --ids -t 2)
check "run --ids twice agree" [ "$ids1" == "$ids2" ]
check "run --ids prints 8 ids" [ "$(echo "$ids1" | wc -w)" -eq 8 ]
check "ids in vocabulary" bash -c "for i in $ids1; do [ \$i -ge 0 ] && [ \$i -lt 32000 ] || exit 1; done"
# seeds: same seed same text, sampling at temperature.
s1=$("$TANDEM" run -m "$M" -p "Hello" -n 12 --temp 1 --seed 9 --ids)
s2=$("$TANDEM" run -m "$M" -p "Hello" -n 12 --temp 1 --seed 9 --ids)
check "same seed same sample" [ "$s1" == "$s2" ]
check "qwen2 runs" bash -c "\"$TANDEM\" run -m \"$WORK/qwen.gguf\" -p \"Hi there\" -n 4 --temp 0 >/dev/null"
check "gen-model custom qwen3 (heads apart from dim)" "$TANDEM" gen-model --arch qwen3 --dim 64 --layers 1 --heads 4 --kv-heads 2 \
  --head-dim 32 --ffn 96 --type q8_0 -o "$WORK/qwen3.gguf"
check "qwen3 runs" bash -c "\"$TANDEM\" info -m \"$WORK/qwen3.gguf\" | grep -q 'attention width 128' && \"$TANDEM\" run -m \"$WORK/qwen3.gguf\" --prompt-ids '1 2 3' -n 4 --temp 0 --ids >/dev/null"

# tokenize --raw reproduces a conformance case; without --raw the BOS comes first.
check "tokenize --raw" [ "$("$TANDEM" tokenize -m "$SHARED/testdata/vocab/ggml-vocab-llama-spm.gguf" -p "Hello world" --raw)" == "15043 3186" ]
check "tokenize adds BOS" [ "$("$TANDEM" tokenize -m "$SHARED/testdata/vocab/ggml-vocab-llama-spm.gguf" -p "Hello world")" == "1 15043 3186" ]

# info names the architecture and lists tensors.
info=$("$TANDEM" info -m "$M")
check "info arch" grep -q "architecture:  llama" <<<"$info"
check "info tensor table" grep -q "blk.1.ffn_down.weight" <<<"$info"

# bench --json has the fields tools read.
json=$("$TANDEM" bench -m "$M" -p 16 -n 4 -r 1 --json)
check "bench json pp_tok_s" grep -q '"pp_tok_s":' <<<"$json"
check "bench json tg_tok_s" grep -q '"tg_tok_s":' <<<"$json"
table=$("$TANDEM" bench -m "$M" -p 16 -n 4 -r 2 2>/dev/null)
check "bench table rows" grep -q "pp16" <<<"$table"

# The OpenCL library is loaded at run time: without one, the opencl device is "no" with the paths
# tried and what to install, the others stay, and the cpu still runs.
nocl=$(TANDEM_OPENCL_LIBRARY=/nonexistent/libOpenCL.so "$TANDEM" devices 2>&1)
check "no OpenCL library: said" grep -q "^| opencl .* no .*no OpenCL library found (tried /nonexistent/libOpenCL.so" <<<"$nocl"
check "no OpenCL library: cpu stays" grep -q "^| cpu .* yes" <<<"$nocl"
check "no OpenCL library: run works" bash -c "TANDEM_OPENCL_LIBRARY=/nonexistent/libOpenCL.so \"$TANDEM\" run -m \"$M\" --prompt-ids '1 2 3' -n 2 --temp 0 --ids >/dev/null"

# GPU + NPU at once: the tokens of the cpu, the report on stderr with -v, the report in bench JSON,
# and an injected NPU run failure that changes nothing but the warning.
if "$TANDEM" devices 2>/dev/null | grep -q "^| opencl"; then
  # The devices compute in fp32 (OpenCL) and fp16 (the npu): their oracle is the cpu in fp32, not
  # its default int8-activation decode.
  cpu_ids=$(TANDEM_MATMUL_PRECISION=fp32 "$TANDEM" run -m "$M" --prompt-ids "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37" -n 6 --ids)
  # The solver by default: the first run profiles the device set (cached per devices + model
  # shapes), later runs read the profile back; -v names the plan and each matmul's choice.
  P37="1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37"
  d1=$("$TANDEM" run -m "$M" --prompt-ids "$P37" -n 6 --ids --devices opencl,npu -v 2>"$WORK/plan1.err")
  d2=$("$TANDEM" run -m "$M" --prompt-ids "$P37" -n 6 --ids --devices opencl,npu -v 2>"$WORK/plan2.err")
  check "default plan tokens equal cpu (profiling run)" [ "$d1" == "$cpu_ids" ]
  check "default plan tokens equal cpu (cached profile)" [ "$d2" == "$cpu_ids" ]
  check "default plan profiled on the first run" grep -q "^plan  *the solver's, for npu,opencl from the device profile .*(profiled now" "$WORK/plan1.err"
  check "default plan read back after" grep -q "^plan  *the solver's, .*(cached, profiled in" "$WORK/plan2.err"
  for n in 1 37; do  # the decode and the prompt length, each with the plan's reason
    check "default plan says why attn_q ran as it did at length $n" grep -qE "^\\| attn_q,attn_output +\\| 64x64 +\\| ([0-9,]*,)?$n(,[0-9]+)* +\\| [a-z-]+ +\\| +[0-9.]+ \\| [a-z-]+( \\(gpu [0-9.]+\\))?: [0-9.]+ ms < " "$WORK/plan2.err"
  done
  check "one profile per device set" [ "$(ls "$XDG_CACHE_HOME/tandem/profiles" | wc -l)" -eq 1 ]
  for s in hybrid padding multi-tensor; do
    h=$("$TANDEM" run -m "$M" --prompt-ids "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37" -n 6 --ids \
        --devices opencl,npu --strategy "$s" -v 2>"$WORK/hetero-$s.err")
    check "opencl,npu $s tokens equal cpu" [ "$h" == "$cpu_ids" ]
    check "opencl,npu $s reports no copies" grep -q "bytes copied    0 host (padding merges), 0 host<->device" "$WORK/hetero-$s.err"
  done
  check "--strategy overrides the plan" bash -c "grep -q '^forward  *npu+opencl hybrid$' '$WORK/hetero-hybrid.err' && ! grep -q '^plan ' '$WORK/hetero-hybrid.err'"
  hj=$("$TANDEM" bench -m "$M" -p 40 -n 2 -r 1 --json --devices opencl,npu --strategy hybrid)
  check "bench json execution report" grep -q '"execution":{.*"npu_graphs":[1-9]' <<<"$hj"
  f=$("$TANDEM" run -m "$M" --prompt-ids "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37" -n 6 --ids \
      --devices opencl,npu --strategy hybrid --npu-fault run:2 2>"$WORK/fault.err")
  check "npu run faults keep the tokens" [ "$f" == "$cpu_ids" ]
  "$TANDEM" plan --soc sd8gen3 -m "$M" --max-len 64 --standard-lengths 32,64 -o "$WORK/hetero-plan.json" >/dev/null
  pl=$("$TANDEM" run -m "$M" --prompt-ids "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37" -n 6 --ids \
       --devices opencl,npu --plan "$WORK/hetero-plan.json" --standard-lengths 32,64)
  check "run --plan keeps the tokens" [ "$pl" == "$cpu_ids" ]
  check "npu run faults warn" grep -q "warning: npu failed" "$WORK/fault.err"
  check "bad fault plan" one_line_error "'run:0'" "$TANDEM" run -m "$M" -p hi --devices opencl,npu --npu-fault run:0
elif [ "${TANDEM_REQUIRE_OPENCL:-}" = 1 ]; then
  check "OpenCL is required here (TANDEM_REQUIRE_OPENCL=1) but tandem devices lists none" false
else
  echo "no OpenCL device: multi-device checks skipped"
fi
# Any set of devices: roles by kind; greedy tokens equal the cpu alone.
# (cpu,npu takes the solver's plan, profiled with the cpu in the GPU's role; the three-device set
# runs hybrid so the test profiles one set fewer.)
# The sets mix the npu's fp16 with the cpu's share, whose size the timed plan decides: the cpu runs
# its fp32 arithmetic here (not its int8-activation decode), so a near-tie of the random model
# cannot part the tokens with the load on the machine.
ids_fp32=$(TANDEM_MATMUL_PRECISION=fp32 "$TANDEM" run -m "$M" --prompt-ids "1 2 3" -n 8 --temp 0 --ids -t 1)
for set in cpu,npu cpu,opencl "cpu,opencl,npu --strategy hybrid"; do
  check "--devices $set tokens equal cpu" [ "$(TANDEM_MATMUL_PRECISION=fp32 "$TANDEM" run -m "$M" --prompt-ids "1 2 3" -n 8 --temp 0 --ids --devices $set 2>/dev/null)" == "$ids_fp32" ]
done
# An npu alone runs its matmuls with the cpu as host for the rest, and -v says so.
check "--devices npu tokens equal cpu" [ "$(TANDEM_MATMUL_PRECISION=fp32 "$TANDEM" run -m "$M" --prompt-ids "1 2 3" -n 8 --temp 0 --ids --devices npu 2>/dev/null)" == "$ids_fp32" ]
check "--devices npu says the cpu joined" bash -c "\"$TANDEM\" run -m \"$M\" --prompt-ids '1 2' -n 1 --devices npu -v 2>&1 | grep -q 'npu runs static graphs only: the cpu joined as the host'"
check "unknown device named" one_line_error "'tpu'" "$TANDEM" run -m "$M" --prompt-ids "1 2" -n 1 --devices cpu,tpu
check "fault plan needs the npu" one_line_error "needs an npu in --devices" "$TANDEM" run -m "$M" -p hi --npu-fault run

# simulate: a prediction on a modeled SoC, with the JSON fields tools read.
sj=$("$TANDEM" simulate --soc sd8gen3 --model-preset internlm2-1.8b --prompt 64 --gen 2 --json)
for k in prefill_tok_s decode_tok_s decode_gb_s energy_j; do
  check "simulate json $k" grep -q "\"$k\":[0-9]" <<<"$sj"
done
# The solver by default: simulate profiles the SoC model and solves a plan on the fly, which is
# exactly what profile + plan + --plan give by hand.
check "simulate solves by default" grep -q '"strategy":"plan (solved for sd8gen3)"' <<<"$sj"
"$TANDEM" plan --soc sd8gen3 -m "$M" -o "$WORK/plan-default.json" >/dev/null 2>&1
check "simulate default equals profile+plan+--plan" python3 -c "
import json,subprocess,sys
run=lambda *a: json.loads(subprocess.run(['$TANDEM','simulate','--soc','sd8gen3','-m','$M','--prompt','40','--gen','2','--json',*a],capture_output=True,text=True,check=True).stdout)
d=run(); p=run('--plan','$WORK/plan-default.json')
sys.exit(0 if (d['prefill_tok_s'],d['decode_tok_s'])==(p['prefill_tok_s'],p['decode_tok_s']) else 1)"
check "simulate table" bash -c "\"$TANDEM\" simulate --soc sd8elite -m \"$M\" --prompt 40 --gen 2 | grep -q 'prefill t/s'"
pj=$("$TANDEM" plan --soc sd8gen3 --op 2048x2048 --seq 100 --json --standard-lengths 32,64,128)
check "plan --op json strategy" grep -qE '"strategy":"(gpu-only|npu-only|layer|weight-centric|activation-centric|multi-tensor|hybrid|padding|online-prepare|npu-pipe)"' <<<"$pj"
check "profile writes a cost DB" "$TANDEM" profile --soc sd8gen3 -m "$M" --standard-lengths 32,64 -o "$WORK/costdb.json"
check "plan from the cost DB" bash -c "\"$TANDEM\" plan --costdb \"$WORK/costdb.json\" -m \"$M\" --max-len 80 -o \"$WORK/plan.json\" | grep -q attn_q"
check "plan json written" grep -q '"format": "tandem-plan-1"' "$WORK/plan.json"
check "simulate --plan" bash -c "\"$TANDEM\" simulate --soc sd8gen3 -m \"$M\" --prompt 40 --gen 2 --plan \"$WORK/plan.json\" --json | grep -q '\"strategy\":\"plan '"
check "run --plan needs opencl,npu" one_line_error "needs an npu in --devices" "$TANDEM" run -m "$M" -p hi --plan "$WORK/plan.json"
check "bad plan file" one_line_error "costdb.json: field 'format'" "$TANDEM" simulate --soc sd8gen3 -m "$M" --plan "$WORK/costdb.json"
check "plan bad op" one_line_error "'4096by4096'" "$TANDEM" plan --soc sd8gen3 --op 4096by4096 --seq 4
check "simulate unknown soc" one_line_error "sd8gen3" "$TANDEM" simulate --soc sd9000 --model-preset llama3-8b
check "simulate unknown preset" one_line_error "'llama9'" "$TANDEM" simulate --model-preset llama9
# profile on this machine's devices (wall clock) and this machine as a SoC description.
check "profile --devices" bash -c "\"$TANDEM\" profile --devices opencl,npu -m \"$M\" --standard-lengths 32 --reps 1 -o \"$WORK/hostdb.json\" --soc-out \"$WORK/host.json\" | grep -q 'profiled .* on opencl,npu'"
check "host soc written" grep -q '"name": "host"' "$WORK/host.json"
check "host cost db from devices" grep -q '"source": "devices opencl,npu' "$WORK/hostdb.json"
check "profile --devices needs weights" one_line_error "need weights" "$TANDEM" profile --devices opencl,npu --model-preset llama3-8b -o "$WORK/x.json"
check "profile --soc-out needs devices" one_line_error "--soc-out: needs --devices" "$TANDEM" profile --soc sd8gen3 -m "$M" -o "$WORK/x.json" --soc-out "$WORK/y.json"
# any set of devices: one device has no handoff to measure, and this machine is one cpu unit.
check "profile --devices cpu" bash -c "\"$TANDEM\" profile --devices cpu -m \"$M\" --standard-lengths 32 --reps 1 -o \"$WORK/cpudb.json\" --soc-out \"$WORK/cpu-host.json\" | grep -q 'sync: not measured: one device (cpu)'"
check "cpu host soc is one cpu unit" grep -q '"kind": "cpu"' "$WORK/cpu-host.json"
check "profile --devices npu alone" one_line_error "runs static graphs only" "$TANDEM" profile --devices npu -m "$M" -o "$WORK/x.json"
check "profile --devices empty name" one_line_error "has an empty name" "$TANDEM" profile --devices opencl,,npu -m "$M" -o "$WORK/x.json"
check "profile --devices twice" one_line_error "names 'cpu' twice" "$TANDEM" profile --devices cpu,npu,cpu -m "$M" -o "$WORK/x.json"
# buckets: static-shape length buckets for a length distribution.
bj=$("$TANDEM" buckets --lengths heavy-tail --count 6 --json)
for k in '"optimized":{"boundaries":[' '"pow2":{"boundaries":[128,256,512,1024,2048,4096]' '"padding_pct":'; do
  check "buckets json $k" grep -qF "$k" <<<"$bj"
done
check "buckets table" bash -c "\"$TANDEM\" buckets --lengths uniform:100-900 --count 3 | grep -q '^| optimized'"
check "buckets bad lengths" one_line_error "'nope'" "$TANDEM" buckets --lengths nope
# report: HeteroInfer's evaluation on a modeled SoC (a small configuration).
check "report heteroinfer" bash -c "\"$TANDEM\" report heteroinfer -o \"$WORK/rep\" --models internlm2-1.8b --prefill-lengths 32,64 --dynamic-lengths 135 --gen 2 --no-sensitivity | grep -q 'decode internlm2-1.8b'"
for f in report.md report.json prefill_vs_length.svg dynamic_lengths.svg decode.svg ablation.svg energy.svg; do
  check "report wrote $f" test -s "$WORK/rep/$f"
done
check "report unknown paper" one_line_error "'mlc'" "$TANDEM" report mlc -o "$WORK/rep2"
check "report bad lengths" one_line_error "--prefill-lengths: '0'" "$TANDEM" report heteroinfer -o "$WORK/rep2" --prefill-lengths 32,0

# compile: the NPU variant set through the MLIR compiler into a compile cache (when built with it;
# a build configured -DTANDEM_COMPILER=OFF says how to get it).
# (pipefail would make a pipe from the failing command false: read its output first.)
compile_probe=$("$TANDEM" compile 2>&1)
if grep -q "without the MLIR compiler" <<<"$compile_probe"; then
  check "compile absent says how to get it" one_line_error "-DTANDEM_COMPILER=ON" "$TANDEM" compile --model-preset test-small -o "$WORK/c0"
else
  Q="$WORK/q4.gguf"; CC="$WORK/cache"
  "$TANDEM" gen-model --preset test-small --type q4_0 --seed 5 -o "$Q" >/dev/null 2>&1
  # The defaults compile any model: automatic buckets stay within its context (test-small: 512).
  check "compile with default buckets" bash -c "\"$TANDEM\" compile -m \"$Q\" --json -o \"$WORK/cache_auto\" | python3 -c 'import json,sys; b=json.load(sys.stdin)[\"buckets\"]; sys.exit(0 if b and max(b)<=512 else 1)'"
  check "compile buckets past the context" one_line_error "context of 512" "$TANDEM" compile -m "$Q" --buckets 128,1024 -o "$WORK/cache_big"
  cj=$("$TANDEM" compile -m "$Q" --buckets 4,8 --power-levels max,1.5W --json -o "$CC")
  check "compile json" bash -c "grep -q '\"variants\":6' <<<'$cj' && grep -q '\"programs_compiled\":84' <<<'$cj'"
  check "compile manifest" python3 -c "import json,sys; m=json.load(open('$CC/manifest.json')); sys.exit(0 if len(m['programs'])>0 and all(len(p['sha256'])==64 and p['max_error_ratio']<=1 for p in m['programs']) else 1)"
  check "compile timed every variant" python3 -c "import json,sys; m=json.load(open('$CC/manifest.json')); sys.exit(0 if all(v['exec_seconds']>0 and v['ddr_bytes']>0 for v in m['variants']) else 1)"
  # The checks run on worker threads beside the MLIR pipeline; the cache must not depend on how many.
  J1="$WORK/cache_j1"; J3="$WORK/cache_j3"
  "$TANDEM" compile -m "$Q" --buckets 4,8 --power-levels max,1.5W -j 1 -o "$J1" >/dev/null
  "$TANDEM" compile -m "$Q" --buckets 4,8 --power-levels max,1.5W -j 3 -o "$J3" >/dev/null
  check "compile same cache with -j 1 and -j 3" python3 -c "
import json,sys
def keep(d):
    m=json.load(open(d+'/manifest.json'))
    return ([(p['name'],p['sha256'],p['max_error_ratio']) for p in m['programs']],
            [(v['phase'],v['rows'],v['power_level'],v['programs'],v['exec_seconds'],v['ddr_bytes']) for v in m['variants']])
a,b=keep('$J1'),keep('$J3')
sys.exit(0 if a==b and len(a[0])>0 and all(r>=0 for _,_,r in a[0]) else 1)"
  check "compile bad jobs" one_line_error "--jobs" "$TANDEM" compile --model-preset test-small --buckets 8 -j 300 -o "$WORK/c3"
  # --fuse-clusters: each norm and the linears of its cluster reading it as one validated program.
  FC="$WORK/fused"
  fj=$("$TANDEM" compile -m "$Q" --buckets 4,8 --fuse-clusters --kv-layout head_major --json -o "$FC")
  check "compile --fuse-clusters json" python3 -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j['fused_programs']>0 and j['programs_compiled']<42 else 1)" "$fj"
  check "fused programs validated" python3 -c "import json,sys; m=json.load(open('$FC/manifest.json')); f=[p for p in m['programs'] if p['kind']=='norm_linear']; sys.exit(0 if f and all(0<=p['max_error_ratio']<=1 and len(p['norm_linear']['outs'])>=2 for p in f) else 1)"
  # A KV the npu owns (the npu alone: the cpu hosts attention and reads its pages): every append is
  # the compiler's program, in the one layout compiled for both phases, and the tokens are the cpu's.
  # The cpu's tokens here are its fp32 arithmetic's (TANDEM_MATMUL_PRECISION=fp32), as the other
  # devices compute: its default int8-activation decode may pick another of two near-equal logits
  # of this random model (it does after 11 prompt tokens below).
  kv_cpu=$(TANDEM_MATMUL_PRECISION=fp32 "$TANDEM" run -m "$Q" --prompt-ids "1 2 3 4 5 6 7" -n 6 --ids --temp 0)
  kv_npu=$("$TANDEM" run -m "$Q" --devices npu --strategy npu-only --prompt-ids "1 2 3 4 5 6 7" -n 6 --ids --temp 0 --npu-cache "$FC" -v 2>"$WORK/kv.err")
  check "npu-owned KV: tokens equal cpu" same_nonempty "$kv_cpu" "$kv_npu"
  check "npu-owned KV: every append the compiler's program" grep -Eq '^kv cache +npu-owned fp16 pages, head_major.*; [1-9][0-9]* appends by the npu' "$WORK/kv.err"
  check "compile table" bash -c "\"$TANDEM\" compile --model-preset test-small --buckets 16 --no-validate -o '$WORK/cache2' | grep -Eq '^\\| prefill \\|    16 \\|.*\\|  +- \\|  +- \\|'"
  # A real f32 model whose FFN width (172) the q4_0 and q8_0 blocks do not divide: by default the
  # compile is in the format the npu packs it in (f16) and a run with the cache gives the cpu's
  # tokens; asked for q4_0, the linears reading 172 columns fall back to f16, said in the table.
  S="$SHARED/testdata/models/stories260K.gguf"
  if [ -f "$S" ]; then
    check "compile stories260K (f32) by default" bash -c "\"$TANDEM\" compile -m '$S' --buckets 8 -o '$WORK/c260' | grep -Eq '^\| decode  \|     1 \| max    \| f16 '"
    st_cpu=$(TANDEM_MATMUL_PRECISION=fp32 "$TANDEM" run -m "$S" --prompt-ids "1 2 3 4 5" -n 8 --ids --temp 0)
    st_npu=$("$TANDEM" run -m "$S" --devices cpu,npu --strategy npu-only --prompt-ids "1 2 3 4 5" -n 8 --ids --temp 0 --npu-cache "$WORK/c260" 2>/dev/null)
    check "stories260K with its compile cache: tokens equal cpu" same_nonempty "$st_cpu" "$st_npu"
    check "compile stories260K as q4_0: ffn_down falls back to f16" bash -c "\"$TANDEM\" compile -m '$S' --buckets 8 --precisions q4_0 --no-validate -o '$WORK/c260q' | grep -Eq '^\| prefill \|     8 \| max    \| q4_0 .*linear -> npu \(f16\)'"
    check "format fallback names the weight" grep -q "blk.0.ffn_down.weight: input width 172 is not a multiple of the q4_0 block (32); compiled as f16" "$WORK/c260q/manifest.json"
  fi
  # simulate given the cache: the SoC's NPU shapes the cache holds are timed on the compiled programs
  # (the standard lengths are its buckets, so npu-only asks for nothing else); a cache for another
  # NPU target is refused.
  sc=$("$TANDEM" simulate --soc sd8gen3 -m "$Q" --prompt 7 --gen 2 --strategy npu-only --npu-cache "$CC" --json)
  check "simulate times the compiled programs" python3 -c "import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if j['npu_shapes_compiled']>0 and j['npu_shapes_library']==0 else 1)" "$sc"
  check "simulate --npu-cache for another NPU" one_line_error "manifest.json" "$TANDEM" simulate --soc sd8elite -m "$Q" --npu-cache "$CC"
  run_ids() { "$TANDEM" run -m "$Q" --devices opencl,npu --strategy npu-only --standard-lengths 4,8 --prompt-ids "1 2 3 4 5 6 7" -n 6 --ids --temp 0 "$@" 2>/dev/null; }
  if "$TANDEM" devices 2>/dev/null | grep -q "opencl.*yes"; then
    lib=$(run_ids); cc=$(run_ids --npu-cache "$CC")
    check "npu cache: same tokens as the library" same_nonempty "$lib" "$cc"
    check "npu cache used" bash -c "\"$TANDEM\" run -m '$Q' --devices opencl,npu --strategy npu-only --standard-lengths 4,8 --prompt-ids '1 2 3' -n 2 --npu-cache '$CC' -v 2>&1 | grep -Eq '\\(([1-9][0-9]*) compiled, from the compile cache'"
    # The runtime's standard lengths are the cache's buckets unless given: npu-only then runs only
    # compiled programs (its row ops too, beside its matmuls); lengths the cache lacks are built at
    # run time and -v names the first and why.
    ce=$("$TANDEM" run -m "$Q" --devices opencl,npu --strategy npu-only --prompt-ids "1 2 3 4 5 6 7" -n 2 --npu-cache "$CC" -v 2>&1 >/dev/null)
    all_compiled() { grep -Eq '\(([1-9][0-9]*) compiled, from the compile cache' <<<"$1" && ! grep -q '^npu programs' <<<"$1"; }
    check "npu cache: its buckets are the standard lengths" all_compiled "$ce"
    check "npu cache: row ops run beside the npu's matmuls" grep -q "^npu row ops  *[1-9]" <<<"$ce"
    check "npu cache: programs built at run time are counted and explained" bash -c "\"$TANDEM\" run -m '$Q' --devices opencl,npu --strategy npu-only --standard-lengths 4,16 --prompt-ids '1 2 3 4 5 6 7 8 9 10 11' -n 2 --npu-cache '$CC' -v 2>&1 | grep -Eq '^npu programs +[1-9][0-9]* from the compile cache, [1-9][0-9]* built at run time; first not cached: [a-z_]+:.*x16x.*: the cache has no program of this shape \\(for (in=64|rmsnorm of 64 columns) it has rows 1,4,8'"
    # A plan's weight splits, compiled (--plan): the NPU's slice of every split binds a compiled
    # program; the cache without them builds those slices at run time.
    "$TANDEM" plan --soc sd8gen3 -m "$Q" --max-len 16 --standard-lengths 4,8 -o "$WORK/soc-plan.json" >/dev/null
    python3 -c "
import json,sys
p=json.load(open(sys.argv[1]))
for op in p['ops']: op['ranges']=[dict(op['ranges'][0], n_min=1, n_max=16, strategy='hybrid', gpu_share=0.5)]
json.dump(p, open(sys.argv[2],'w'))" "$WORK/soc-plan.json" "$WORK/half.json"
    sj=$("$TANDEM" compile -m "$Q" --buckets 4,8 --plan "$WORK/half.json" --json -o "$WORK/cache_split")
    check "compile --plan compiles the split slices" python3 -c "import json,sys; sys.exit(0 if json.loads(sys.argv[1])['split_programs']==9 else 1)" "$sj"
    split_run() { "$TANDEM" run -m "$Q" --devices opencl,npu --plan "$WORK/half.json" --prompt-ids "1 2 3 4 5 6 7 8 9 10 11" -n 4 --ids --temp 0 -v "$@"; }
    q_cpu=$(TANDEM_MATMUL_PRECISION=fp32 "$TANDEM" run -m "$Q" --prompt-ids "1 2 3 4 5 6 7 8 9 10 11" -n 4 --ids --temp 0)
    sr=$(split_run --npu-cache "$WORK/cache_split" 2>"$WORK/split.err")
    check "split slices: tokens equal cpu" same_nonempty "$q_cpu" "$sr"
    check "split slices: every npu program from the cache" all_compiled "$(cat "$WORK/split.err")"
    check "split slices: a cache without them builds them at run time" bash -c "'$TANDEM' run -m '$Q' --devices opencl,npu --plan '$WORK/half.json' --prompt-ids '1 2 3' -n 2 --npu-cache '$CC' -v 2>&1 | grep -Eq '^npu programs .* built at run time; first not cached: matmul:blk.0.[a-z_]+.weight\\[[0-9]+:[0-9]+\\]'"
    "$TANDEM" plan --soc sd8gen3 --model-preset internlm2-1.8b --max-len 8 -o "$WORK/other-plan.json" >/dev/null
    check "compile --plan of another model" one_line_error "other-plan.json: op 'attn_q" "$TANDEM" compile -m "$Q" --buckets 4 --plan "$WORK/other-plan.json" -o "$WORK/c4"
    # A fused cache: each norm and the projections reading it run as one compiled program.
    fused=$("$TANDEM" run -m "$Q" --devices opencl,npu --strategy npu-only --standard-lengths 4,8 --prompt-ids "1 2 3 4 5 6 7" -n 6 --temp 0 --npu-cache "$FC" -v 2>&1 >/dev/null)
    check "fused cache: same tokens" same_nonempty "$lib" "$(run_ids --npu-cache "$FC")"
    fused_launched() { grep -Eq '^npu row ops .*, [1-9][0-9]* fused norm\+projection programs' <<<"$1" && all_compiled "$1"; }
    check "fused cache: norm+projection programs launched, every npu program compiled" fused_launched "$fused"
    check "npu cache at 1.5W: same tokens" same_nonempty "$lib" "$(run_ids --npu-cache "$CC" --npu-power-level 1.5W)"
    check "npu power level unknown" one_line_error "no variants at power level '9W' (the cache has: max, 1.5W)" "$TANDEM" run -m "$Q" --devices opencl,npu --prompt-ids "1 2" -n 1 --npu-cache "$CC" --npu-power-level 9W
    cp -r "$CC" "$WORK/tampered"; f=$(ls "$WORK"/tampered/programs/mm*.tnpu | head -1)  # a matmul: the runtime loads those
    printf '\x01' | dd of="$f" bs=1 seek=60 conv=notrunc 2>/dev/null
    # Refused means refused: the run fails (it does not run that part on the GPU instead).
    check "tampered program refused" one_line_error "refusing to run a modified program" "$TANDEM" run -m "$Q" --devices opencl,npu --strategy npu-only --standard-lengths 4,8 --prompt-ids "1 2 3 4 5 6 7" -n 2 --npu-cache "$WORK/tampered"
    check "stale cache refused" one_line_error "compiled for another model" "$TANDEM" run -m "$M" --devices opencl,npu --prompt-ids "1 2" -n 1 --npu-cache "$CC"
  fi
  # The compile cache's matmul programs lowered to Hexagon objects (clang-19 + ld.lld-19): the
  # hexagon device runs the cache's DSP binary, every prepared matmul a compiled program, the tokens
  # those of the generic DSP kernels; a changed binary, one for another ISA, or a cache without
  # Hexagon objects is refused with what to do.
  if "$TANDEM" devices 2>/dev/null | grep -qE "^\| hexagon +\| npu +\| yes"; then
    hx_run() { "$TANDEM" run -m "$Q" --devices cpu,hexagon --strategy npu-only --standard-lengths 4,8 --prompt-ids "1 2 3 4 5 6 7" -n 6 --temp 0 "$@"; }
    check "compile lowers to Hexagon" grep -q "^hexagon: [1-9][0-9]* programs lowered to hexagon-v66-hvx128 objects" <<<"$("$TANDEM" compile -m "$Q" --buckets 4,8 -o "$WORK/hx")"
    check "the cache records the Hexagon files" python3 -c "
import json,sys,hashlib
m=json.load(open('$WORK/hx/manifest.json')); h=m['hexagon']
files=[h['binary']]+h['sources']+h['objects']
ok=h['target']=='hexagon-v66-hvx128' and len(h['programs'])>0 and all(hashlib.sha256(open('$WORK/hx/'+f['file'],'rb').read()).hexdigest()==f['sha256'] for f in files)
sys.exit(0 if ok else 1)"
    hx_plain=$(hx_run 2>/dev/null)
    hx_cached=$(hx_run --npu-cache "$WORK/hx" 2>/dev/null)
    check "hexagon cache: the generic kernels' tokens" same_nonempty "$hx_plain" "$hx_cached"
    check "hexagon cache: every matmul a compiled program" grep -Eq "^npu graphs +([1-9][0-9]*) prepared \(\1 compiled" <<<"$(hx_run --npu-cache "$WORK/hx" -v 2>&1 >/dev/null)"
    cp -r "$WORK/hx" "$WORK/hx_tampered"
    printf '\x01' | dd of="$WORK/hx_tampered/hexagon/tandem_hexagon_dsp" bs=1 seek=4000 conv=notrunc 2>/dev/null
    check "hexagon cache: a changed binary is refused" one_line_error "hexagon/tandem_hexagon_dsp: SHA-256" hx_run --npu-cache "$WORK/hx_tampered"
    cp -r "$WORK/hx" "$WORK/hx_v73"
    sed -i 's/"target": "hexagon-v66-hvx128"/"target": "hexagon-v73-hvx128"/' "$WORK/hx_v73/manifest.json"
    check "hexagon cache: objects for another ISA are refused" one_line_error "built for 'hexagon-v73-hvx128', this DSP runs 'hexagon-v66-hvx128'" hx_run --npu-cache "$WORK/hx_v73"
    "$TANDEM" compile -m "$Q" --buckets 4,8 --hexagon off -o "$WORK/hx_off" >/dev/null
    check "hexagon cache: none in the cache says how to compile them" one_line_error "holds no Hexagon objects" hx_run --npu-cache "$WORK/hx_off"
    check "compile --hexagon bad" one_line_error "--hexagon: 'maybe'" "$TANDEM" compile -m "$Q" --buckets 4 --hexagon maybe -o "$WORK/hx_bad"
  elif [ "${TANDEM_REQUIRE_HEXAGON:-}" = 1 ]; then
    check "the Hexagon DSP is required here (TANDEM_REQUIRE_HEXAGON=1) but tandem devices lists none" false
  fi
  check "compile needs a model" one_line_error "-m MODEL or --model-preset" "$TANDEM" compile -o "$WORK/c3"
  check "compile bad power level" one_line_error "'fast'" "$TANDEM" compile --model-preset test-small --power-levels max,fast -o "$WORK/c3"
  check "compile bad buckets" one_line_error "must increase" "$TANDEM" compile --model-preset test-small --buckets 8,4 -o "$WORK/c3"
  check "compile bad precision" one_line_error "'q5_k'" "$TANDEM" compile --model-preset test-small --buckets 8 --precisions q5_k -o "$WORK/c3"
  check "compile report" bash -c "\"$TANDEM\" compile --report -o '$WORK/edgellm' | grep -q '^  ours' && test -s '$WORK/edgellm/report.md' && test -s '$WORK/edgellm/fusion_latency.svg'"
  check "npu power level needs a cache" one_line_error "needs --npu-cache" "$TANDEM" run -m "$M" --devices opencl,npu --prompt-ids "1" -n 1 --npu-power-level max
  check "npu cache needs hetero" one_line_error "needs an npu in --devices" "$TANDEM" run -m "$M" --prompt-ids "1" --npu-cache "$CC"
fi

# errors: non-zero exit, one line, naming the problem.
check "missing model file" one_line_error "/nonexistent.gguf" "$TANDEM" run -m /nonexistent.gguf -p hi
check "not a gguf" one_line_error "magic" "$TANDEM" info -m "$SHARED/testdata/vocab/ggml-vocab-llama-spm.gguf.inp"
check "bad prompt ids" one_line_error "'x1'" "$TANDEM" run -m "$M" --prompt-ids "1 x1"
check "id outside vocab" one_line_error "99999" "$TANDEM" run -m "$M" --prompt-ids "1 99999"
check "unknown preset" one_line_error "nope" "$TANDEM" gen-model --preset nope -o "$WORK/x.gguf"
check "bad type" one_line_error "q5_k" "$TANDEM" gen-model --preset test-small --type q5_k -o "$WORK/x.gguf"
check "unknown option" one_line_error "--frobnicate" "$TANDEM" run -m "$M" -p hi --frobnicate
check "bad temperature" one_line_error "--min-p" "$TANDEM" run -m "$M" -p hi --min-p 3
head -c 200 "$M" > "$WORK/truncated.gguf"
check "truncated model" one_line_error "truncated.gguf" "$TANDEM" run -m "$WORK/truncated.gguf" -p hi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
