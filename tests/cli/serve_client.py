#!/usr/bin/env python3
"""Hostile and careful HTTP clients of `tandem serve`, for tests/cli/bad_input_serve.sh.

usage: serve_client.py PORT CHECK ARGS...   (exit 0: the check holds; else what was seen)

Raw sockets, so a request can be anything (a bad length, a flood of headers, half a head);
every wait has a timeout, so a server that hangs fails the check instead of the suite.
"""
import argparse
import codecs
import json
import socket
import sys
import time

HOST = "127.0.0.1"


def fail(message):
    print("  " + message)
    sys.exit(1)


def connect(port, timeout=5.0):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.settimeout(timeout)
    return s


class Response:
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body

    def header(self, name):
        return self.headers.get(name.lower())

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"{self.status} {self.reason} {self.headers} {self.body[:300]!r}"


class Reader:
    """Reads HTTP responses off one socket (Content-Length or chunked bodies)."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def _more(self):
        b = self.sock.recv(65536)
        if not b:
            raise EOFError("the server closed the connection")
        self.buf += b

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self, head_only=False):
        status_line = self._line().decode("latin-1")
        parts = status_line.split(" ", 2)
        status = int(parts[1])
        headers = {}
        while True:
            line = self._line()
            if not line:
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        body = b""
        if head_only or status == 100:
            pass
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    self._line()
                    break
                body += self._take(size)
                self._take(2)
        else:
            body = self._take(int(headers.get("content-length", "0")))
        return Response(status, parts[2] if len(parts) > 2 else "", headers, body)


def request_bytes(method, path, body=None, headers=()):
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
    for h in headers:
        head += h + "\r\n"
    if body is not None:
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + (body or b"")


def exchange(port, data, timeout=5.0, head_only=False):
    with connect(port, timeout) as s:
        s.sendall(data)
        return Reader(s).response(head_only)


def expect(r, status, code=None, header=None):
    if r.status != status:
        fail(f"expected {status}, got {r!r}")
    if code is not None:
        try:
            got = r.json()["error"]["code"]
        except Exception:
            fail(f"expected an error object with code {code}, got {r!r}")
        if got != code:
            fail(f"expected code {code}, got {r!r}")
    if header is not None:
        name, _, value = header.partition(":")
        if (r.header(name) or "") != value.strip():
            fail(f"expected the header '{header}', got {r!r}")


def health(port, timeout=5.0):
    r = exchange(port, request_bytes("GET", "/health"), timeout)
    return r.json()


# --- checks -------------------------------------------------------------------------------------


def check_send(port, a):
    """send RAW STATUS [CODE] [HEADER]: RAW (with \\r\\n, \\xHH escapes) gets STATUS within a few seconds."""
    data = codecs.escape_decode(a.raw.encode())[0]
    t0 = time.monotonic()
    try:
        r = exchange(port, data, timeout=a.within, head_only=a.method_head)
    except (socket.timeout, EOFError, ConnectionError) as e:
        fail(f"no answer within {a.within} s ({e})")
    expect(r, a.status, a.code or None, a.header or None)
    if a.method_head and r.body:
        fail("a HEAD answer with a body")
    if time.monotonic() - t0 > a.within:
        fail(f"answered after {time.monotonic() - t0:.1f} s")


def check_chat(port, a):
    """chat CONTENT STATUS [CODE]: one chat request whose last message is CONTENT."""
    body = {"messages": [{"role": "user", "content": a.content}], "max_tokens": 2, "temperature": 0}
    r = exchange(port, request_bytes("POST", "/v1/chat/completions", body), timeout=20)
    expect(r, a.status, a.code or None)
    if a.status == 200:
        r.json()["choices"][0]["message"]["content"]


def check_invalid_utf8(port, a):
    body = b'{"messages": [{"role": "user", "content": "caf\xe9 \xff"}], "max_tokens": 2}'
    r = exchange(port, request_bytes("POST", "/v1/chat/completions", body))
    expect(r, 400, "invalid_utf8")
    if r.json()["error"]["param"] != "messages[0].content":
        fail(f"the error does not name messages[0].content: {r!r}")


def check_echo_bytes(port, a):
    """Echoed token ids that decode to broken UTF-8 (byte tokens <0xC3>, <0xFF>) still give valid JSON."""
    body = {"prompt": [1, 3 + 0xC3, 3 + 0xFF], "echo": True, "max_tokens": 3, "temperature": 0}
    r = exchange(port, request_bytes("POST", "/v1/completions", body))
    expect(r, 200)
    r.body.decode("utf-8")  # strict: every byte valid
    if "\ufffd" not in r.json()["choices"][0]["text"]:
        fail(f"no U+FFFD where the bytes were: {r!r}")


def check_text_bound(port, a):
    """An 8 MB text prompt is refused by its size, before any tokenizing ("at least N tokens")."""
    body = {"prompt": "hello world " * 666000, "max_tokens": 1}
    r = exchange(port, request_bytes("POST", "/v1/completions", body), timeout=20)
    expect(r, 400, "context_length_exceeded")
    if "at least" not in r.json()["error"]["message"]:
        fail(f"counted by tokenizing, not bounded by size: {r!r}")


def check_wide_objects(port, a):
    """Objects with many keys (which the ordered parser compares pairwise): refused while parsing."""
    keys = {f"k{i}": 0 for i in range(600000)}  # 8 MB in one object: hours before the limits
    for label, body in [("one object of 600,000 keys", {"messages": [{"role": "user", "content": "hi"}],
                                                        "logit_bias": keys}),
                        ("300 objects of 1,000 keys", {"messages": [{"role": "user", "content": "hi"}],
                                                       "x": [{f"k{i}": 0 for i in range(1000)}] * 300})]:
        t0 = time.monotonic()
        r = exchange(port, request_bytes("POST", "/v1/chat/completions", body), timeout=20)
        expect(r, 400, "object_above_max_keys")
        if time.monotonic() - t0 > a.within:
            fail(f"{label}: refused only after {time.monotonic() - t0:.1f} s")


def check_pipelined(port, a):
    """N completions and a /health in one write: N + 1 answers, in order, on the one connection."""
    one = request_bytes("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 1, "temperature": 0})
    with connect(port) as s:
        s.sendall(one * a.n + request_bytes("GET", "/health", headers=["Connection: close"]))
        reader = Reader(s)
        for i in range(a.n):
            r = reader.response()
            expect(r, 200)
            if r.json()["object"] != "text_completion":
                fail(f"answer {i} is not a completion: {r!r}")
        r = reader.response()
        expect(r, 200)
        if r.json().get("status") != "ok":
            fail(f"the last answer is not /health's: {r!r}")


def check_keepalive(port, a):
    """N requests one after another on one connection (it goes back to the gate between them)."""
    with connect(port) as s:
        reader = Reader(s)
        for _ in range(a.n):
            s.sendall(request_bytes("GET", "/health"))
            expect(reader.response(), 200)


def check_expect_continue(port, a):
    """Expect: 100-continue: 100 before the body is sent, then the answer; no second 100."""
    body = json.dumps({"prompt": "hi", "max_tokens": 1}).encode()
    with connect(port) as s:
        head = request_bytes("POST", "/v1/completions", body)
        s.sendall(head[: -len(body) - 2] + b"Expect: 100-continue\r\n\r\n")
        reader = Reader(s)
        expect(reader.response(), 100)
        s.sendall(body)
        expect(reader.response(), 200)


def check_half_head(port, a):
    """Half a head, then the client stops sending: 400 at once, not a wait for the deadline."""
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Le")
        s.shutdown(socket.SHUT_WR)
        expect(Reader(s).response(), 400, "malformed_request")


def check_idle_health(port, a):
    """N connections that send nothing; /health answers within a hang bound while they are open."""
    idle = [connect(port) for _ in range(a.n)]
    try:
        time.sleep(0.2)
        t0 = time.monotonic()
        h = health(port, timeout=a.within)
        if h.get("status") != "ok":
            fail(f"/health: {h}")
        print(f"  (/health with {a.n} idle connections open: {1000 * (time.monotonic() - t0):.1f} ms)")
    except socket.timeout:
        fail(f"/health did not answer within {a.within} s with {a.n} idle connections open")
    finally:
        for s in idle:
            s.close()


def check_evict(port, a):
    """More idle connections than the server's cap: the oldest is closed, new ones are served."""
    first = connect(port)
    time.sleep(0.05)
    rest = [connect(port) for _ in range(a.n)]
    try:
        first.settimeout(3)
        try:
            if first.recv(1) != b"":
                fail("the oldest idle connection got data, not a close")
        except socket.timeout:
            fail(f"the oldest idle connection was still open with {a.n + 1} open")
        h = health(port)
        if h.get("status") != "ok":
            fail(f"/health: {h}")
    finally:
        for s in rest + [first]:
            s.close()


def probe_slow_head(port, a):
    """(background) A head that never ends: 408 after the head deadline; writes 'STATUS SECONDS'."""
    t0 = time.monotonic()
    result = "none"
    try:
        with connect(port, timeout=30) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            result = f"{Reader(s).response().status} {time.monotonic() - t0:.1f}"
    except Exception as e:
        result = f"{type(e).__name__} {time.monotonic() - t0:.1f}"
    open(a.out, "w").write(result + "\n")


def probe_idle(port, a):
    """(background) A connection that sends nothing: closed after the idle timeout; writes 'SECONDS'."""
    t0 = time.monotonic()
    try:
        with connect(port, timeout=30) as s:
            data = s.recv(1)
            result = f"{time.monotonic() - t0:.1f}" if data == b"" else "data"
    except Exception as e:
        result = f"{type(e).__name__}"
    open(a.out, "w").write(result + "\n")


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def check_rss_burst(port, a):
    """N requests of 200,000 messages (3.2 MB each): each refused at once, and the memory comes back."""
    body = json.dumps({"messages": [{"role": "user"}] * 200000}, separators=(",", ":")).encode()
    data = request_bytes("POST", "/v1/chat/completions", body)
    before = rss_kib(a.pid)
    slowest = 0.0
    for _ in range(a.n):
        t0 = time.monotonic()
        expect(exchange(port, data, timeout=20), 400, "array_above_max_length")
        slowest = max(slowest, time.monotonic() - t0)
    time.sleep(1)
    after = rss_kib(a.pid)
    print(f"  (RSS {before} KiB before {a.n} requests of {len(body)} bytes, {after} KiB after; slowest {slowest:.2f} s)")
    if a.max_growth_kib and after - before > a.max_growth_kib:
        fail(f"RSS grew {after - before} KiB (more than {a.max_growth_kib})")
    if slowest > a.within:
        fail(f"a request took {slowest:.2f} s to be refused")


def cancelled_chats(port):
    """How many chat requests /metrics counts as ended by their client leaving (status 499)."""
    text = exchange(port, request_bytes("GET", "/metrics")).body.decode()
    for line in text.splitlines():
        if line.startswith('tandem_requests_total{endpoint="/v1/chat/completions",code="499"}'):
            return int(line.split()[-1])
    return 0


def check_render_cancel(port, a):
    """A long render is counted in /health while it runs, and stops when its client goes away:
    within the bound, and counted as the client's leaving (499), not as a render that ran out its
    budget (500: the interpreter's limits end any render within a few seconds)."""
    body = {"messages": [{"role": "user", "content": "spin"}], "max_tokens": 1}
    cancelled_before = cancelled_chats(port)
    s = connect(port)
    s.sendall(request_bytes("POST", "/v1/chat/completions", body))
    deadline = time.monotonic() + 3
    while health(port).get("requests_preparing") != 1:
        if time.monotonic() > deadline:
            fail(f"/health never counted the render: {health(port)}")
        time.sleep(0.05)
    metrics = exchange(port, request_bytes("GET", "/metrics")).body.decode()
    if "tandem_requests_preparing 1" not in metrics:
        fail("/metrics does not count the render (tandem_requests_preparing 1)")
    s.close()
    t0 = time.monotonic()
    while health(port).get("requests_preparing") != 0:
        if time.monotonic() - t0 > a.within:
            fail(f"the render still runs {a.within} s after its client left")
        time.sleep(0.05)
    print(f"  (the render stopped {time.monotonic() - t0:.2f} s after its client left)")
    if cancelled_chats(port) != cancelled_before + 1:
        fail("the render was not counted as cancelled (code 499): it ended some other way")


def wait_preparing(port, a):
    """Waits (at most 5 s) until /health counts N requests being prepared."""
    deadline = time.monotonic() + 5
    while health(port).get("requests_preparing") != a.n:
        if time.monotonic() > deadline:
            fail(f"/health never counted {a.n} requests being prepared: {health(port)}")
        time.sleep(0.05)


def start_render(port, a):
    """(background) A chat request whose render runs long: writes the status it got to OUT."""
    body = {"messages": [{"role": "user", "content": a.content}], "max_tokens": 1}
    try:
        r = exchange(port, request_bytes("POST", "/v1/chat/completions", body), timeout=60)
        result = f"{r.status} {r.json()['error']['code'] if r.status != 200 else ''}"
    except Exception as e:
        result = type(e).__name__
    open(a.out, "w").write(result + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    sub = p.add_subparsers(dest="check", required=True)
    c = sub.add_parser("send")
    c.add_argument("raw")
    c.add_argument("status", type=int)
    c.add_argument("code", nargs="?", default="")
    c.add_argument("header", nargs="?", default="")
    c.add_argument("--within", type=float, default=5.0)
    c.add_argument("--head", dest="method_head", action="store_true")
    c.set_defaults(fn=check_send)
    c = sub.add_parser("chat")
    c.add_argument("content")
    c.add_argument("status", type=int)
    c.add_argument("code", nargs="?", default="")
    c.set_defaults(fn=check_chat)
    for name, fn in [("invalid-utf8", check_invalid_utf8), ("echo-bytes", check_echo_bytes),
                     ("text-bound", check_text_bound), ("expect-continue", check_expect_continue),
                     ("half-head", check_half_head)]:
        sub.add_parser(name).set_defaults(fn=fn)
    for name, fn in [("pipelined", check_pipelined), ("keepalive", check_keepalive), ("evict", check_evict)]:
        c = sub.add_parser(name)
        c.add_argument("n", type=int)
        c.set_defaults(fn=fn)
    c = sub.add_parser("idle-health")
    c.add_argument("n", type=int)
    c.add_argument("--within", type=float, default=2.0)
    c.set_defaults(fn=check_idle_health)
    for name, fn in [("probe-slow-head", probe_slow_head), ("probe-idle", probe_idle)]:
        c = sub.add_parser(name)
        c.add_argument("out")
        c.set_defaults(fn=fn)
    c = sub.add_parser("wide-objects")
    c.add_argument("--within", type=float, default=3.0)
    c.set_defaults(fn=check_wide_objects)
    c = sub.add_parser("rss-burst")
    c.add_argument("pid", type=int)
    c.add_argument("n", type=int)
    c.add_argument("--max-growth-kib", type=int, default=0)
    c.add_argument("--within", type=float, default=2.0)
    c.set_defaults(fn=check_rss_burst)
    c = sub.add_parser("render-cancel")
    c.add_argument("--within", type=float, default=3.0)
    c.set_defaults(fn=check_render_cancel)
    c = sub.add_parser("wait-preparing")
    c.add_argument("n", type=int)
    c.set_defaults(fn=wait_preparing)
    c = sub.add_parser("start-render")
    c.add_argument("content")
    c.add_argument("out")
    c.set_defaults(fn=start_render)
    a = p.parse_args()
    a.fn(a.port, a)


if __name__ == "__main__":
    main()
