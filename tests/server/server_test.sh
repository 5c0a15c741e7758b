#!/usr/bin/env bash
# tandem serve end to end, through OpenAI's official npm client (server_test.mjs): the endpoints,
# streaming, concurrency, disconnects, bad requests and a bounded load test, against stories260K
# with a small chat template. The greedy reply must equal `tandem run --chat` on the same messages.
# Usage: server_test.sh TANDEM SHARED_DIR SOURCE_DIR WORK_DIR
set -uo pipefail
TANDEM=$1 SHARED=$2 SRC=$3 WORK=$4
need_client() {
  if [ -n "${TANDEM_REQUIRE_SERVER_CLIENT:-}" ]; then echo "FAIL: $1"; exit 1; fi
  echo "SKIP: $1"
  exit 77
}
command -v node > /dev/null || need_client "no node"
[ -d "$SRC/tests/server/node_modules/openai" ] || need_client "no openai npm client (npm ci --prefix tests/server)"

rm -rf "$WORK" && mkdir -p "$WORK"
# The URL a server started in the background prints on stdout (OUT), once it listens; empty if
# the process (PID) ends first or 30 s pass.
server_url() {
  for _ in $(seq 1 300); do
    grep -q "listening on" "$1" && break
    kill -0 "$2" 2> /dev/null || break
    sleep 0.1
  done
  sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$1"
}
MODEL=$SHARED/testdata/models/stories260K.gguf
TEMPLATE=$SRC/tests/chat/data/compact.jinja
SYSTEM="Tell a story."
USER="Once upon a time"
# The greedy reference: the one-shot chat command on the same messages.
"$TANDEM" run -m "$MODEL" --chat --template "$TEMPLATE" --system "$SYSTEM" -p "$USER" -n 24 --temp 0 \
  > "$WORK/reference.txt" 2> "$WORK/reference.err" || { echo "FAIL: run --chat"; cat "$WORK/reference.err"; exit 1; }

"$TANDEM" serve -m "$MODEL" --template "$TEMPLATE" --port 0 --slots 4 -c 16384 --api-key test-key \
  > "$WORK/serve.out" 2> "$WORK/serve.err" &
PID=$!
URL=$(server_url "$WORK/serve.out" "$PID")
if [ -z "$URL" ]; then
  echo "FAIL: the server did not start"
  cat "$WORK/serve.err"
  kill "$PID" 2> /dev/null
  exit 1
fi
echo "server at $URL (pid $PID)"

RSS_CHECK=()
[ -n "${TANDEM_SANITIZED:-}" ] && RSS_CHECK=(--no-rss-check)
node "$SRC/tests/server/server_test.mjs" --url "$URL" --key test-key --pid "$PID" --model stories260K \
  --system "$SYSTEM" --user "$USER" --reference "$WORK/reference.txt" "${RSS_CHECK[@]}"
rc=$?
result() {  # NAME OK
  if [ "$2" = 1 ]; then echo "PASS: $1"; else echo "FAIL: $1"; rc=1; fi
}
case $URL in http://127.0.0.1:*) ok=1 ;; *) ok=0 ;; esac
result "binds 127.0.0.1 by default ($URL)" $ok

# A second server on the same port: one clear line, exit 1.
PORT=${URL##*:}
timeout 30 "$TANDEM" serve -m "$MODEL" --template "$TEMPLATE" --port "$PORT" > /dev/null 2> "$WORK/busy.err"
busy_rc=$?
ok=0
[ "$busy_rc" = 1 ] && [ "$(wc -l < "$WORK/busy.err")" = 1 ] && grep -q "tandem: error: serve: cannot listen on 127.0.0.1:$PORT" "$WORK/busy.err" && ok=1
result "a port in use is a one-line error (exit $busy_rc: $(cat "$WORK/busy.err"))" $ok

# A model without a chat template: it starts (and says so), chat answers 400 no_chat_template,
# completions work.
"$TANDEM" serve -m "$MODEL" --port 0 --slots 1 > "$WORK/plain.out" 2> "$WORK/plain.err" &
PLAIN=$!
PLAIN_URL=$(server_url "$WORK/plain.out" "$PLAIN")
ok=0
grep -q "has no chat template" "$WORK/plain.err" && [ -n "$PLAIN_URL" ] && node -e '
  const url = process.argv[1];
  const post = (path, body) => fetch(url + path, { method: "POST", headers: { "Content-Type": "application/json" },
                                                   body: JSON.stringify(body) });
  (async () => {
    const chat = await post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] });
    const error = (await chat.json()).error;
    const done = await post("/v1/completions", { prompt: "Once", max_tokens: 4 });
    const text = (await done.json()).choices?.[0]?.text;
    process.exit(chat.status === 400 && error.code === "no_chat_template" && done.status === 200 && text ? 0 : 1);
  })().catch(() => process.exit(1));' "$PLAIN_URL" && ok=1
result "a model without a chat template: chat 400 no_chat_template, completions work" $ok
kill -TERM "$PLAIN" 2> /dev/null
wait "$PLAIN" 2> /dev/null

# SIGTERM stops it cleanly: exit 0, and it says so.
kill -TERM "$PID"
timeout 30 tail --pid="$PID" -f /dev/null
wait "$PID"
serve_rc=$?
if [ "$serve_rc" != 0 ] || ! grep -q "stopped (SIGTERM)" "$WORK/serve.err"; then
  echo "FAIL: SIGTERM: exit $serve_rc"
  tail -5 "$WORK/serve.err"
  rc=1
else
  echo "PASS: SIGTERM stops the server (exit 0)"
fi
exit $rc
