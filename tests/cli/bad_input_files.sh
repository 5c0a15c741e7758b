# The bad-input cases of issue 56, parts 4 and 5 (sourced near the end of bad_input_test.sh, whose
# case_in / bad / good / holds, $TANDEM, $WORK, $M, $RUN and the GGUF mutants in $WORK/mut it uses):
# files whose tensors share bytes or whose tokenizer and embedding disagree, token ids outside the
# vocabulary, the numeric options' words and bounds, and a write past the file size limit.
# About 2 s in release on two cores.

MUT="$WORK/mut"
SHARED=${2:-}  # bad_input_test.sh's SHARED_DIR (a sourced file sees the script's arguments)

# --- Tensor layout: each tensor's bytes are its own. The error names the file and both tensors.
case_in "tensor layout"
bad "two tensors at one offset" \
  "tensors-one-offset.gguf: tensors 'blk.0.attn_q.weight' and 'blk.0.attn_k.weight': both start at offset" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/tensors-one-offset.gguf"
bad "retyped q8_0 -> f32, into the next" \
  "tensor-retyped.gguf: tensor 'blk.0.attn_q.weight': data [offset" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/tensor-retyped.gguf"
bad "retyped: its size from type and shape" "16384 bytes: f32 [64, 64]] runs 12032 bytes into tensor 'blk.0.attn_k.weight'" \
  "$TANDEM" info -m "$MUT/tensor-retyped.gguf"
bad "a row more, into the next" "tensor 'blk.0.ffn_gate.weight': data [offset" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/tensor-rows-grown.gguf"
bad "a row more: by 68 bytes" "13124 bytes: q8_0 [64, 193]] runs 68 bytes into tensor 'blk.0.ffn_up.weight'" \
  "$TANDEM" info -m "$MUT/tensor-rows-grown.gguf"
bad "one tensor inside another" "tensor 'blk.0.attn_q.weight': data [offset" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/tensor-inside-another.gguf"
# Every reader of GGUF refuses them, not only the model loader (tokenize reads vocabulary files).
bad "tokenize refuses it too" "tensors-one-offset.gguf: tensors 'blk.0.attn_q.weight' and 'blk.0.attn_k.weight'" \
  "$TANDEM" tokenize -m "$MUT/tensors-one-offset.gguf" -p "Hello"
# Legitimate: tensors stored in another order than listed, apart (ggml insists on its writer's
# packing; tandem only on each tensor's bytes being its own). attn_k and attn_v are the same size.
python3 - "$M" "$WORK/swapped.gguf" "$HERE" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[3])
import gguf_mutants
data = bytearray(open(sys.argv[1], "rb").read())
_, tensors = gguf_mutants.parse(bytes(data))
k, v = (next(t for t in tensors if t["name"] == n) for n in ("blk.0.attn_k.weight", "blk.0.attn_v.weight"))
ko, vo = (struct.unpack_from("<Q", data, t["offset_at"])[0] for t in (k, v))
struct.pack_into("<Q", data, k["offset_at"], vo)
struct.pack_into("<Q", data, v["offset_at"], ko)
open(sys.argv[2], "wb").write(data)
PY
good "two tensors' places swapped: still apart, it runs" "$TANDEM" "${RUN[@]}" -m "$WORK/swapped.gguf"

# --- The tokenizer and the embedding: one row of token_embd.weight (and of output.weight) per
# token, as llama.cpp requires. 10 tokens over 32000 rows loaded, and `run` printed an empty line.
case_in vocabulary
bad "10 tokens, 32000 embedding rows" \
  "tokens-ten.gguf: tokenizer.ggml.tokens: 10 tokens, but token_embd.weight has 32000 rows" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/tokens-ten.gguf"
bad "10 tokens: info refuses it too" "10 tokens, but token_embd.weight has 32000 rows" \
  "$TANDEM" info -m "$MUT/tokens-ten.gguf"
bad "32000 tokens, 31000 rows" "embedding-short.gguf: tokenizer.ggml.tokens: 32000 tokens, but token_embd.weight has 31000 rows" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/embedding-short.gguf"
# Padded past the token list (vocab_size 32000, 32064 rows): refused on one line (no padding warning first).
bad "32000 tokens, 32064 rows" "embedding-padded.gguf: tokenizer.ggml.tokens: 32000 tokens, but token_embd.weight has 32064 rows" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/embedding-padded.gguf"
bad "output.weight 31968 rows" "output-short.gguf: tensor 'output.weight': 31968 rows, but token_embd.weight has 32000" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/output-short.gguf"
bad "output.weight 32064 rows" "output-padded.gguf: tensor 'output.weight': 32064 rows, but token_embd.weight has 32000" \
  "$TANDEM" "${RUN[@]}" -m "$MUT/output-padded.gguf"
# Real files hold to it: Phi-3 pads its vocabulary to 32064 in the token list itself, as llama.cpp's
# converter writes it; stories260K is a file from llama.cpp's tools.
"$TANDEM" gen-model --preset phi3-mini --dim 64 --layers 1 --heads 2 --kv-heads 2 --ffn 64 --type q8_0 \
  -o "$WORK/phi3-vocab.gguf" >/dev/null 2>&1
good "phi3: 32064 tokens, 32064 rows" "$TANDEM" run -m "$WORK/phi3-vocab.gguf" --prompt-ids "1 32063" -n 2 --temp 0 --ids
if [ -f "$SHARED/testdata/models/stories260K.gguf" ]; then
  good "stories260K runs" "$TANDEM" run -m "$SHARED/testdata/models/stories260K.gguf" -p "Once" -n 4 --temp 0
fi

# --- Token ids a user gives: refused when outside the vocabulary, with the option, the id and the
# vocabulary's size (the id reached the forward pass, whose error named neither).
case_in "token ids"
bad "--prompt-ids the vocabulary's size" "--prompt-ids: 32000 is outside the vocabulary of 32000 tokens (0..31999)" \
  "$TANDEM" run -m "$M" --prompt-ids "1 32000" -n 1
bad "--prompt-ids far past it" "--prompt-ids: 99999999 is outside the vocabulary of 32000 tokens" \
  "$TANDEM" run -m "$M" --prompt-ids "1,99999999" -n 1 --ids
bad "--prompt-ids past phi3's 32064" "--prompt-ids: 32064 is outside the vocabulary of 32064 tokens (0..32063)" \
  "$TANDEM" run -m "$WORK/phi3-vocab.gguf" --prompt-ids "32064" -n 1
bad "--prompt-ids -1" "--prompt-ids: '-1' is not a token id" "$TANDEM" run -m "$M" --prompt-ids "1 -1" -n 1
bad "--prompt-ids 2^32" "--prompt-ids: '4294967296' is not a token id" "$TANDEM" run -m "$M" --prompt-ids "4294967296" -n 1
good "--prompt-ids the last token" "$TANDEM" run -m "$M" --prompt-ids "31999" -n 1 --temp 0 --ids

# --- Numeric options: an error says what is wrong in a person's words, with the bounds as the
# --help line writes them (never CLI11's "not in range" with DBL_MAX's 309 digits).
case_in "numeric options"
bad "--seed abc" "--seed: 'abc' is not an integer" "$TANDEM" "${RUN[@]}" -m "$M" --seed abc
bad "--seed 2^64" "--seed: 18446744073709551616 is past 2^64-1" "$TANDEM" "${RUN[@]}" -m "$M" --seed 18446744073709551616
bad "--seed 10^30" "--seed: 1000000000000000000000000000000 is past 2^64-1" "$TANDEM" "${RUN[@]}" -m "$M" --seed 1000000000000000000000000000000
bad "--seed -1, said so" "--seed: -1 is negative (0..2^64-1)" "$TANDEM" "${RUN[@]}" -m "$M" --seed -1
bad "--seed 1.5" "--seed: '1.5' is not an integer" "$TANDEM" "${RUN[@]}" -m "$M" --seed 1.5
bad "--seed ''" "--seed: an empty value is not an integer" "$TANDEM" "${RUN[@]}" -m "$M" --seed ""
bad "--seed 0x10 (no hex)" "--seed: '0x10' is not an integer" "$TANDEM" "${RUN[@]}" -m "$M" --seed 0x10
bad "gen-model --seed 2^64" "--seed: 18446744073709551616 is past 2^64-1" \
  "$TANDEM" gen-model --preset test-small --seed 18446744073709551616 -o "$WORK/seed.gguf"
good "--seed 2^64-1" "$TANDEM" "${RUN[@]}" -m "$M" --seed 18446744073709551615
# Read as decimal: -c 010 is ten (strtoll in base 0 made it 8, too small for these 9 tokens).
good "-c 010 is ten, not octal 8" "$TANDEM" run -m "$M" --prompt-ids "1 2 3 4 5 6 7 8 9" -n 1 -c 010 --temp 0 --ids
while IFS='|' read -r text args; do
  eval "set -- $args"
  bad "$text" "$text" "$TANDEM" "$@"
done <<EOF
--threads: 0 is below 1 (1..1024)|run -m "$M" --prompt-ids 1 -t 0
--threads: 100000 is past 1024 (1..1024)|bench -m "$M" -t 100000
--ctx-size: -1 is negative (0..1048576)|run -m "$M" --prompt-ids 1 -c -1
--n-predict: -1 is negative (>= 0)|run -m "$M" --prompt-ids 1 -n -1
--n-predict: 99999999999 is past 2^31-1|run -m "$M" --prompt-ids 1 -n 99999999999
--n-predict: -2 is below -1 (>= -1)|chat -m "$M" -n -2
--temp: -1 is negative (>= 0)|run -m "$M" --prompt-ids 1 --temp -1
--temp: inf is not finite (>= 0)|run -m "$M" --prompt-ids 1 --temp inf
--temp: 'nan' is not a number|run -m "$M" --prompt-ids 1 --temp nan
--temp: 1e39 is past the largest float, 3.4e38 (>= 0)|run -m "$M" --prompt-ids 1 --temp 1e39
--top-p: 0 is outside (0, 1]|run -m "$M" --prompt-ids 1 --top-p 0
--min-p: 1.5 is outside [0, 1]|run -m "$M" --prompt-ids 1 --min-p 1.5
--repeat-penalty: 0 is not positive (> 0)|run -m "$M" --prompt-ids 1 --repeat-penalty 0
--top-k: 'many' is not an integer|run -m "$M" --prompt-ids 1 --top-k many
--repeat-last-n: '1.5' is not an integer|run -m "$M" --prompt-ids 1 --repeat-last-n 1.5
--repetitions: 0 is below 1 (1..1000)|bench -m "$M" -r 0
--n-depth: 2000000 is past 1048576 (0..1048576)|bench -m "$M" -d 2000000
--ratio: 2 is outside [0, 1]|simulate --model-preset test-small --ratio 2
--variant-cost-ms: -1 is outside [0, 1e9]|buckets --variant-cost-ms -1
--count: 65 is past 64 (1..64)|buckets --count 65
--dim: 0 is below 1 (1..65536)|gen-model --arch llama --dim 0 --layers 1 --heads 1 --ffn 8 -o "$WORK/x.gguf"
--max-len: 0 is below 1 (1..1048576)|plan --model-preset test-small --max-len 0
--threads: -1 is negative (0..1024)|profile --soc sd8gen3 --model-preset test-small -t -1 -o "$WORK/x.json"
--gen: 0 is below 1 (1..100000)|report heteroinfer --gen 0 -o "$WORK/x"
EOF
no_dbl_max() {  # no_dbl_max COMMAND...: its error does not print a bound as hundreds of digits
  ! "$@" 2>&1 | grep -Eq '[0-9]{40}|not in range'
}
holds "no 309-digit bound" no_dbl_max "$TANDEM" run -m "$M" --prompt-ids 1 -n -5
holds "no 309-digit bound (--seed)" no_dbl_max "$TANDEM" run -m "$M" --prompt-ids 1 --seed -5

# --- A write past the file size limit (ulimit -f): SIGXFSZ killed tandem mid-write and left
# OUT.partial-PID-0. Now the write fails on one line, nothing is left, an old file stays as it was.
case_in "file size limit"
mkdir -p "$WORK/fsz"
bad "quantize past ulimit -f" "q.gguf: writing the GGUF file failed (file size limit exceeded" \
  bash -c 'ulimit -f 100 && exec "$0" quantize "$1" "$2" q4_0' "$TANDEM" "$M" "$WORK/fsz/q.gguf"
holds "quantize: no file, no temporary" [ -z "$(ls -A "$WORK/fsz")" ]
cp "$M" "$WORK/fsz/old.gguf"
bad "gen-model over a file, past ulimit -f" "old.gguf: writing the GGUF file failed (file size limit exceeded" \
  bash -c 'ulimit -f 100 && exec "$0" gen-model --preset test-small -o "$1"' "$TANDEM" "$WORK/fsz/old.gguf"
holds "gen-model: the old file stays, nothing beside it" \
  bash -c 'cmp -s "$0" "$1" && [ "$(ls -A "$2")" = old.gguf ]' "$M" "$WORK/fsz/old.gguf" "$WORK/fsz"
rm -f "$WORK/fsz/old.gguf"
bad "profile -o past ulimit -f" "c.json: writing the cost DB failed (file size limit exceeded" \
  bash -c 'ulimit -f 8 && exec "$0" profile --soc sd8gen3 --model-preset test-small -o "$1"' "$TANDEM" "$WORK/fsz/c.json"
holds "profile: no file, no temporary" [ -z "$(ls -A "$WORK/fsz")" ]
