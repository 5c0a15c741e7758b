#!/usr/bin/env bash
# The conversation commands from the outside: `tandem template` (the prompt, the template's
# text, JSON lines, and one-line errors for bad messages and templates), `run --chat`, and
# `tandem chat` fed through a pipe (/reset, /exit, a message past the context), whose first greedy
# reply must equal `run --chat`'s on the same message.
#   chat_cli_test.sh TANDEM SHARED_DIR SOURCE_DIR WORK_DIR
set -uo pipefail
TANDEM=$1 SHARED=$2 SRC=$3 WORK=$4
source "$SRC/tests/cli/check_lib.sh"
rm -rf "$WORK" && mkdir -p "$WORK"
STORIES="$SHARED/testdata/models/stories260K.gguf"
PHI3="$SHARED/testdata/vocab/ggml-vocab-phi-3.gguf"
SPM="$SHARED/testdata/vocab/ggml-vocab-llama-spm.gguf"
TMPL="$SRC/tests/chat/data/compact.jinja"
CONV="$SRC/tests/chat/conversations"

# --- tandem template
out=$("$TANDEM" template -m "$PHI3" --messages "$CONV/system_user.json")
check "template: phi-3's own template" [ "$out" == $'<s><|user|>\nWhat is the capital of France?<|end|>\n<|assistant|>' ]
QWEN2="$SHARED/testdata/vocab/ggml-vocab-qwen2.gguf"
with=$("$TANDEM" template -m "$QWEN2" --messages "$CONV/user_only.json")
without=$("$TANDEM" template -m "$QWEN2" --messages "$CONV/user_only.json" --no-generation-prompt)
check "template: --no-generation-prompt leaves the assistant's turn unopened" [ "$with" == "$without"$'\n<|im_start|>assistant' ]
check "template: --show prints the template" bash -c "'$TANDEM' template -m '$QWEN2' --show | grep -q 'add_generation_prompt'"
n=$("$TANDEM" template -m "$PHI3" --json --messages "$CONV/user_only.json" --messages "$CONV/multi_turn.json" | wc -l)
check "template: --json, a line per messages file" [ "$n" -eq 2 ]
printf 'not json' >"$WORK/bad.json"
check "template: messages not JSON" one_line_error "bad.json: not valid JSON" "$TANDEM" template -m "$PHI3" --messages "$WORK/bad.json"
printf '[{"content": "hi"}]' >"$WORK/norole.json"
check "template: a message without a role" one_line_error "messages[0].role" "$TANDEM" template -m "$PHI3" --messages "$WORK/norole.json"
printf '[{"role": "user", "content": 5}]' >"$WORK/numcontent.json"
check "template: content a number" one_line_error "messages[0].content" "$TANDEM" template -m "$PHI3" --messages "$WORK/numcontent.json"
check "template: no chat template in the file" one_line_error "tokenizer.chat_template: missing" "$TANDEM" template -m "$SPM" --messages "$CONV/user_only.json"
check "template: an unknown named template" one_line_error "tokenizer.chat_template.tool_use: missing" "$TANDEM" template -m "$PHI3" --template tool_use --messages "$CONV/user_only.json"
mkfifo "$WORK/fifo.jinja"
check "template: a template file that is a FIFO" one_line_error "not a regular file" timeout 20 "$TANDEM" template -m "$SPM" --template "$WORK/fifo.jinja" --messages "$CONV/user_only.json"
printf '{{ raise_exception("Only user and assistant roles are supported") }}' >"$WORK/raises.jinja"
check "template: raise_exception's message" one_line_error "line 1: the template raised: Only user and assistant roles" "$TANDEM" template -m "$SPM" --template "$WORK/raises.jinja" --messages "$CONV/user_only.json"
printf '{%% for m in messages %%}{{ m.content | no_such_filter }}{%% endfor %%}' >"$WORK/badfilter.jinja"
check "template: an unknown filter named" one_line_error "no filter named 'no_such_filter'" "$TANDEM" template -m "$SPM" --template "$WORK/badfilter.jinja" --messages "$CONV/user_only.json"
printf '{%% include "x.jinja" %%}' >"$WORK/include.jinja"
check "template: an unsupported statement named" one_line_error "{% include %}" "$TANDEM" template -m "$SPM" --template "$WORK/include.jinja" --messages "$CONV/user_only.json"
check "template: several files need --json" one_line_error "need --json" "$TANDEM" template -m "$PHI3" --messages "$CONV/user_only.json" --messages "$CONV/multi_turn.json"

# --- run --chat and chat
check "run: --chat takes text" one_line_error "--chat takes -p TEXT" "$TANDEM" run -m "$STORIES" --chat --prompt-ids "1 2"
check "run: --system needs --chat" one_line_error "apply with --chat" "$TANDEM" run -m "$STORIES" -p hi --system x
once=$("$TANDEM" run -m "$STORIES" --chat --template "$TMPL" --system "Tell a story." -p "Once" -n 8 --temp 0 2>"$WORK/run.err")
once_rc=$?
check "run --chat: exit 0" [ "$once_rc" -eq 0 ]
check "run --chat: text" [ -n "$once" ]
printf 'Once\n/nonsense\n%s\n/reset\nOnce\n/exit\nnever read\n' "$(printf 'a%.0s' $(seq 400))" >"$WORK/chat.in"
"$TANDEM" chat -m "$STORIES" --template "$TMPL" --system "Tell a story." -n 8 --temp 0 -v <"$WORK/chat.in" >"$WORK/chat.out" 2>"$WORK/chat.err"
rc=$?
check "chat: exit 0 at /exit" [ "$rc" -eq 0 ]
first=$(sed -n 1p "$WORK/chat.out")
check "chat: the first greedy reply equals run --chat's" [ "$first" == "$once" ]
check "chat: after /reset the same message gets the same reply" [ "$(sed -n 2p "$WORK/chat.out")" == "$once" ]
check "chat: an unknown command is named" grep -q "unknown command /nonsense" "$WORK/chat.err"
check "chat: a message past the context is refused, the session goes on" grep -q "past the context of 128 tokens" "$WORK/chat.err"
check "chat: -v says what the cache gave" grep -q "reused from the cache" "$WORK/chat.err"
check "chat: /reset is acknowledged" grep -q "starts over" "$WORK/chat.err"
check "chat: /exit ends before the next line" [ "$(wc -l <"$WORK/chat.out")" -eq 2 ]

# Ctrl-C during a long reply stops the reply, not the session: the next line is still read.
# (-c past the model's 128 trained tokens only makes the reply long enough to interrupt.)
# (set -m: a background job of a script otherwise starts with SIGINT ignored.)
mkfifo "$WORK/chat.fifo"
set -m
"$TANDEM" chat -m "$STORIES" --template "$TMPL" -c 32768 -n 30000 --temp 0 <"$WORK/chat.fifo" >"$WORK/sig.out" 2>"$WORK/sig.err" &
pid=$!
exec 7>"$WORK/chat.fifo"
echo "Once" >&7
for _ in $(seq 100); do [ -s "$WORK/sig.out" ] && break; sleep 0.1; done
sleep 0.3
kill -INT "$pid"
for _ in $(seq 100); do grep -q "reply stopped" "$WORK/sig.err" && break; sleep 0.1; done
echo "/exit" >&7
exec 7>&-
timeout 30 tail --pid="$pid" -f /dev/null
wait "$pid"
rc=$?
set +m
check "chat SIGINT: the reply stops, the session goes on to /exit (exit 0)" [ "$rc" -eq 0 ]
check "chat SIGINT: said" grep -q "(reply stopped)" "$WORK/sig.err"

echo "chat_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
