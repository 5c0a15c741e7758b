# The bad-input suite's area for `tandem serve` (issue 56): what a hostile client sends the HTTP
# server, and templates that misbehave. Sourced by bad_input_test.sh (its TANDEM, WORK, M, HERE and
# case_in / bad / good / holds). The clients are tests/cli/serve_client.py (raw sockets: every wait
# has a timeout, so a hang fails a case, never the suite). Bounds on time are hang checks only,
# generous; the behaviour is the status, the header, the memory. About 20 s.

case_in serve
SV="$WORK/serve"
mkdir -p "$SV"
HOSTILE="$HERE/data/hostile.jinja"
CLIENT="$HERE/serve_client.py"
# A sanitizer build holds freed memory back (no RSS bound there) and runs slower.
sanitized=0
ldd "$TANDEM" 2>/dev/null | grep -q 'libasan\|libtsan' && sanitized=1

# --- Refused at start: a template that cannot render one user message (it would fail every chat
# request while /health said ok), and keys that would turn authentication off or lock everyone out.
printf 'ok\n{{ raise_exception("no " ~ messages[0].role ~ " messages") }}' >"$SV/raises.jinja"
printf '{{ messages[0].content.no_such_method() }}' >"$SV/breaks.jinja"
bad "serve: a template that raises at start" "raises.jinja: line 2: the template raised: no user messages" \
  "$TANDEM" serve -m "$M" --port 0 --template "$SV/raises.jinja"
bad "serve: a template that fails at start" "breaks.jinja: line 1:" \
  "$TANDEM" serve -m "$M" --port 0 --template "$SV/breaks.jinja"
bad "chat: the same check, before the weights load" "raises.jinja: line 2: the template raised: no user messages (the start-up check" \
  "$TANDEM" chat -m "$M" --template "$SV/raises.jinja" </dev/null
bad "run --chat: the same check" "raises.jinja: line 2: the template raised: no user messages (the start-up check" \
  "$TANDEM" run --chat -p hi -m "$M" --template "$SV/raises.jinja"
bad "--api-key ''" "--api-key is empty" "$TANDEM" serve -m "$M" --port 0 --api-key ''
bad "TANDEM_API_KEY=''" "TANDEM_API_KEY is empty" env TANDEM_API_KEY= "$TANDEM" serve -m "$M" --port 0
bad "--api-key with a space" "--api-key holds a space" "$TANDEM" serve -m "$M" --port 0 --api-key 'a b'

# --- One server for the hostile clients. Its file limit of 256 makes its connection cap 192
# (kMaxConnections or the limit less 64), so the cap can be filled here.
serve_bg() {  # serve_bg NAME ARGS...: a server in the background; sets spid and sport ("" if it did not start)
  local name=$1; shift
  (ulimit -n 256 && exec "$TANDEM" serve -m "$M" --port 0 "$@") >"$SV/$name.out" 2>"$SV/$name.err" &
  spid=$!
  sport=""
  for _ in $(seq 1 600); do
    sport=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$SV/$name.out")
    [ -n "$sport" ] || ! kill -0 "$spid" 2>/dev/null && break
    sleep 0.05
  done
  [ -n "$sport" ] || { echo "  the server did not start:"; sed 's/^/    /' "$SV/$name.err"; }
}
stopped_within() {  # stopped_within SECONDS: SIGTERM the server; true when it ended within SECONDS (exit in $rc)
  kill -TERM "$spid"
  local i
  for i in $(seq 1 $(( $1 * 20 ))); do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$spid" 2>/dev/null; then
    kill -KILL "$spid"; wait "$spid"; rc=137
    echo "  still running $1 s after SIGTERM"
    return 1
  fi
  wait "$spid"; rc=$?
  stop_seconds=$(awk "BEGIN { print $i / 20 }")
}
# The interpreter itself, once: a version manager's python3 shim costs ~0.5 s a start.
PY=$(python3 -c 'import sys; print(sys.executable)')
client() { "$PY" "$CLIENT" "$sport" "$@"; }

serve_bg main --template "$HOSTILE" --slots 2 -c 256
holds "the server starts with a template that renders one user message" [ -n "$sport" ]
[ -n "$sport" ] || return 0 2>/dev/null

# Deadlines are long; their probes run in the background while the rest goes on.
client probe-slow-head "$SV/slow-head" &
slow_head_pid=$!

# Framing: each refused at once with its status and an OpenAI-style error object.
R='Host: x\r\n'
holds "POST without Content-Length: 411 at once (it hung)" \
  client send "POST /v1/completions HTTP/1.1\r\n$R\r\n{}" 411 length_required
holds "Content-Length: -5: 400 at once (was a 413 after 10 s)" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Content-Length: -5\r\n\r\n{}" 400 invalid_content_length
holds "Content-Length: 99999999999999999999: 400 (it hung)" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Content-Length: 99999999999999999999\r\n\r\n" 400 invalid_content_length
holds "Content-Length: 12abc: 400" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Content-Length: 12abc\r\n\r\n" 400 invalid_content_length
holds "two Content-Lengths that disagree: 400" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}" 400 invalid_content_length
holds "Content-Length beside Transfer-Encoding: 400" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}" 400 invalid_content_length
holds "Content-Length past 8 MiB: 413 before the body is sent" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Content-Length: 9000000\r\n\r\n" 413 request_too_large
holds "Transfer-Encoding: gzip, chunked: 501" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Transfer-Encoding: gzip, chunked\r\n\r\n" 501 unsupported_transfer_encoding
holds "Content-Encoding: gzip (a bomb cpp-httplib would inflate): 415" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}" 415 unsupported_content_encoding
holds "a chunked body: served" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Transfer-Encoding: chunked\r\n\r\n9\r\n{\"prompt\"\r\n18;x=y\r\n: \"hi\", \"max_tokens\": 1}\r\n0\r\n\r\n" 200
holds "a chunk size of 0x10: 400" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Transfer-Encoding: chunked\r\n\r\n0x10\r\n" 400 malformed_request
holds "chunks past 8 MiB: 413 at the size line" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Transfer-Encoding: chunked\r\n\r\n900000\r\n" 413 request_too_large
holds "chunked trailer fields: 400" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-T: 1\r\n\r\n" 400 malformed_request
holds "Expect: 100-continue: 100, then the answer" client expect-continue
holds "Expect: something else: 417" \
  client send "POST /v1/completions HTTP/1.1\r\n${R}Expect: tea\r\nContent-Length: 2\r\n\r\n{}" 417 expectation_failed
holds "200 header lines: 431" client send "GET /health HTTP/1.1\r\n$(printf 'X-A: b\\r\\n%.0s' $(seq 200))\r\n" 431 headers_too_large
holds "a 40 KB header: 431" client send "GET /health HTTP/1.1\r\nX-A: $(printf 'a%.0s' $(seq 40000))\r\n\r\n" 431 headers_too_large
holds "a 9 KB request line: 414" client send "GET /$(printf 'a%.0s' $(seq 9000)) HTTP/1.1\r\n\r\n" 414 uri_too_long
holds "lines that end in LF alone: 400" client send 'GET /health HTTP/1.1\nHost: x\n\n' 400 malformed_request
holds "a folded header line: 400" client send "GET /health HTTP/1.1\r\nX-A: b\r\n c\r\n\r\n" 400 malformed_request
holds "HTTP/2.0: 505" client send 'GET /health HTTP/2.0\r\n\r\n' 505 http_version_not_supported
holds "TLS to a plain port: 400" client send '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n' 400 malformed_request
holds "half a head, then the client stops sending: 400 at once" client half-head
# Methods and paths: 405 with Allow for a known path, 404 for an unknown one.
holds "GET /v1/chat/completions: 405, Allow: POST" \
  client send "GET /v1/chat/completions HTTP/1.1\r\n$R\r\n" 405 method_not_allowed "Allow: POST"
holds "DELETE /health: 405, Allow: GET, HEAD" \
  client send "DELETE /health HTTP/1.1\r\n$R\r\n" 405 method_not_allowed "Allow: GET, HEAD"
holds "OPTIONS /v1/models: 405" client send "OPTIONS /v1/models HTTP/1.1\r\n$R\r\n" 405 method_not_allowed "Allow: GET, HEAD"
holds "PUT /v1/models/x: 405" client send "PUT /v1/models/x HTTP/1.1\r\n${R}Content-Length: 0\r\n\r\n" 405 method_not_allowed
holds "POST /nowhere: 404" client send "POST /nowhere HTTP/1.1\r\n${R}Content-Length: 2\r\n\r\n{}" 404 unknown_url
holds "HEAD /health: 200, no body" client send "HEAD /health HTTP/1.1\r\n$R\r\n" 200 --head
holds "a percent-encoded path is the path: GET /v1/%6dodels" client send "GET /v1/%6dodels HTTP/1.1\r\n$R\r\n" 200
# Connections: pipelined and keep-alive requests, idle ones that hold no thread, a full table.
holds "3 pipelined completions and a /health: 4 answers in order" client pipelined 3
holds "5 requests on one keep-alive connection" client keepalive 5
holds "/health within 2 s while 150 idle connections are open (was 6-8 s with 60)" client idle-health 150
holds "past the connection cap (192 here), the oldest idle connection is closed" client evict 200
client probe-idle "$SV/idle" &
idle_pid=$!

# Requests: the client's bytes and the model's bytes never make an answer fail.
holds "invalid UTF-8 in a message: 400 naming messages[0].content (was a 500)" client invalid-utf8
holds "echoed token ids that are broken UTF-8: 200, valid JSON" client echo-bytes
holds "an 8 MB text prompt: refused by its size, not tokenized" client text-bound
holds "objects of many keys (quadratic to parse in order): refused while parsing (80,000 keys took 38 s)" \
  client wide-objects
if [ "$sanitized" -eq 1 ]; then rss=(--within 10); else rss=(--max-growth-kib 65536 --within 1); fi
holds "20 requests of 200,000 messages: each refused at once, RSS back near where it was" \
  client rss-burst "$spid" 20 "${rss[@]}"
# Templates that misbehave: an error for that request only.
holds "a message the template refuses (raise_exception): 400" client chat refuse 400
holds "a template that fails while rendering: 500 template_error" client chat fail 500 template_error
holds "a render that runs for minutes: counted in /health, stopped when its client leaves" client render-cancel
holds "after all of it, a chat request is answered" client chat "Once upon a time" 200

wait "$idle_pid" "$slow_head_pid"
read -r idle_seconds <"$SV/idle"
holds "an idle connection is closed after the idle timeout (5 s; closed after ${idle_seconds})" \
  awk "BEGIN { exit !($idle_seconds >= 4.5 && $idle_seconds < 8) }"
read -r head_status head_seconds <"$SV/slow-head"
holds "a head that never ends: 408 after the head deadline (10 s; got $head_status after ${head_seconds:-?} s)" \
  awk "BEGIN { exit !(\"$head_status\" == \"408\" && $head_seconds >= 9.5 && $head_seconds < 14) }"

# SIGTERM with a render in flight: the render stops, its client gets 503, the server exits 0.
client start-render spin "$SV/spin" &
render_pid=$!
holds "a render in flight (counted in /health)" client wait-preparing 1
holds "SIGTERM with a render in flight: ends within 3 s" stopped_within 3
holds "... exit 0, and says so (exit $rc)" bash -c "[ $rc -eq 0 ] && grep -q 'stopped (SIGTERM)' '$SV/main.err'"
wait "$render_pid"
holds "... the render's client got 503 server_shutting_down ($(cat "$SV/spin"))" grep -q "503 server_shutting_down" "$SV/spin"

# A render that never polls its cancel hook (empty loop bodies, which this interpreter counts no
# steps for) still does not keep the process past its grace (5 s): it exits as the signal would
# have ended it (143, and says so). An interpreter that charges those loops ends the render first
# (exit 0): either way the server is gone within the bound.
serve_bg hang --template "$HOSTILE" --slots 1 -c 64
client start-render hang "$SV/hang" &
render_pid=$!
holds "a render that never polls, in flight" client wait-preparing 1
holds "SIGTERM with a render that never stops: ends within 8 s" stopped_within 8
holds "... exit 0, or 143 saying why (exit $rc)" \
  bash -c "[ $rc -eq 0 ] || { [ $rc -eq 143 ] && grep -q 'still running 5 s after SIGTERM' '$SV/hang.err'; }"
wait "$render_pid"
