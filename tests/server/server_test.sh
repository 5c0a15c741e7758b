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
for _ in $(seq 1 300); do
  grep -q "listening on" "$WORK/serve.out" && break
  kill -0 "$PID" 2> /dev/null || break
  sleep 0.1
done
URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$WORK/serve.out")
if [ -z "$URL" ]; then
  echo "FAIL: the server did not start"
  cat "$WORK/serve.err"
  kill "$PID" 2> /dev/null
  exit 1
fi
echo "server at $URL (pid $PID)"

node "$SRC/tests/server/server_test.mjs" --url "$URL" --key test-key --pid "$PID" --model stories260K \
  --system "$SYSTEM" --user "$USER" --reference "$WORK/reference.txt"
rc=$?

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
