#!/usr/bin/env python3
"""hostile_upstream.py -- an LLM provider that attacks the proxy in front of it.

The request's "model" names the attack, so one route with models = * reaches
them all. Prints "port=N" once listening (like the mock upstream). Modes:

  endless_line   SSE headers, then one line that never ends
  endless_event  SSE "data:" lines that never get the blank line ending an event
  flood          valid chat chunks as fast as the socket takes them, forever
  hang           one valid chunk, then nothing (the stream stays open)
  drip           a valid short stream sent one byte at a time
  reset          two chunks, then a TCP reset
  giant          a whole chat.completion of GIANT_MB megabytes (default 64)
  gzip_bomb      the same 256 MB answer gzip-compressed to a few hundred KB
  redirect       302 to /stolen on this server (a proxy must not follow it)
  bad_events     chunks that are not valid chat chunks among valid ones
  big_header     a whole chat.completion whose head has a 20 KB header line
  big_header_stream  the same head on a stream
  fresh_calls    a stream that opens a new tool call (fresh index and id) in
                 each of its 3,000 chunks, to a stream or to a whole request
  same_id        a whole answer of 20,000 tool calls that all carry one id
  bad_choices    one 800 KB stream event of 400,000 choices that are not
                 objects, then a valid chunk
  same_id_args   a stream of one call whose 100,000 argument fragments each
                 repeat its id and name (as some providers send them)
  drip_slow      a stream event sent a byte every 0.3 s, never ended in time
  dropped_calls  a whole answer of 100,000 calls without a name (each dropped)
                 and one valid call

GET /_stolen reports how many requests reached /stolen.
"""
import gzip
import io
import json
import os
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GIANT_MB = int(os.environ.get("GIANT_MB", "64"))
BOMB_MB = int(os.environ.get("BOMB_MB", "256"))
stolen = 0
_bomb = None
_bomb_lock = threading.Lock()


def chunk(content=None, finish=None, role=None):
    delta = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    return json.dumps({"id": "chatcmpl-h", "object": "chat.completion.chunk", "created": 1,
                       "model": "h", "choices": [{"index": 0, "delta": delta,
                                                  "finish_reason": finish}]})


def completion_prefix():
    return ('{"id":"chatcmpl-h","object":"chat.completion","created":1,"model":"h",'
            '"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",'
            '"content":"').encode()


COMPLETION_SUFFIX = b'"}}]}'


def bomb():
    """BOMB_MB of answer, gzip'd once (zeros of JSON text compress ~1000:1)."""
    global _bomb
    with _bomb_lock:
        if _bomb is None:
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9) as g:
                g.write(completion_prefix())
                block = b"A" * (1 << 20)
                for _ in range(BOMB_MB):
                    g.write(block)
                g.write(COMPLETION_SUFFIX)
            _bomb = buf.getvalue()
        return _bomb


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # close-delimited bodies: no framing to fake

    def log_message(self, *a):
        pass

    def do_GET(self):
        global stolen
        if self.path.startswith("/_stolen"):
            self.send_json(200, json.dumps({"stolen": stolen}).encode())
        elif self.path.startswith("/stolen"):
            stolen += 1
            self.send_json(200, b'{"stolen":true}')
        else:
            self.send_json(404, b'{"error":{"message":"no such path"}}')

    def do_POST(self):
        global stolen
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        if self.path.startswith("/stolen"):
            stolen += 1
            self.send_json(200, b'{"stolen":true}')
            return
        try:
            mode = json.loads(body).get("model", "")
        except ValueError:
            mode = ""
        fn = getattr(self, "mode_" + mode, None)
        if not fn:
            self.send_json(400, b'{"error":{"message":"unknown mode"}}')
            return
        try:
            fn()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def send_json(self, status, data, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def sse_head(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()

    def forever(self, block):
        limit = time.monotonic() + 120  # never outlive a test run
        while time.monotonic() < limit:
            self.wfile.write(block)

    def mode_endless_line(self):
        self.sse_head()
        self.wfile.write(b'data: {"choices":[{"delta":{"content":"')
        self.forever(b"x" * 65536)

    def mode_endless_event(self):
        self.sse_head()
        self.forever((b"data: " + b"y" * 1018 + b"\n") * 64)

    def mode_flood(self):
        self.sse_head()
        self.wfile.write(("data: %s\n\n" % chunk("", role="assistant")).encode())
        self.forever(("data: %s\n\n" % chunk("z" * 900)).encode() * 16)

    def mode_hang(self):
        self.sse_head()
        self.wfile.write(("data: %s\n\n" % chunk("waiting", role="assistant")).encode())
        self.wfile.flush()
        time.sleep(120)

    def mode_drip(self):
        self.sse_head()
        text = "".join("data: %s\n\n" % c for c in
                       [chunk("", role="assistant"), chunk("drip"), chunk("ped"),
                        chunk(None, "stop")]) + "data: [DONE]\n\n"
        for b in text.encode():
            self.wfile.write(bytes([b]))
            self.wfile.flush()
            time.sleep(0.002)

    def mode_reset(self):
        self.sse_head()
        for c in (chunk("", role="assistant"), chunk("half an ans")):
            self.wfile.write(("data: %s\n\n" % c).encode())
        self.wfile.flush()
        time.sleep(0.1)
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                   struct.pack("ii", 1, 0))
        self.connection.close()

    def mode_giant(self):
        size = GIANT_MB << 20
        pre = completion_prefix()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(pre) + size + len(COMPLETION_SUFFIX)))
        self.end_headers()
        self.wfile.write(pre)
        block = b"G" * (1 << 20)
        for _ in range(GIANT_MB):
            self.wfile.write(block)
        self.wfile.write(COMPLETION_SUFFIX)

    def mode_gzip_bomb(self):
        data = bomb()
        self.send_json(200, data, [("Content-Encoding", "gzip")])

    def mode_redirect(self):
        port = self.server.server_address[1]
        self.send_response(302)
        self.send_header("Location", "http://localhost:%d/stolen" % port)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def mode_bad_events(self):
        self.sse_head()
        events = [
            chunk("", role="assistant"),
            '{"choices":null}',
            '{"id":"c","choices":[{"index":0,"delta":{"content":5},"finish_reason":null}]}',
            '[1,2,3]',
            '"a string"',
            '{"choices":"nope"}',
            '{"id":"c","choices":[7,{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}',
            '{"id":"c","choices":[{"index":0,"delta":"text","finish_reason":null}]}',
            '{"id":"c","choices":[{"index":0,"delta":{"content":{"x":1},"role":3},"finish_reason":null}]}',
            chunk(None, "stop"),
        ]
        for e in events:
            self.wfile.write(("data: %s\n\n" % e).encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def mode_fresh_calls(self):
        self.sse_head()
        out = []
        for i in range(3000):
            c = {"id": "c", "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
                {"index": i, "id": "t%d" % i, "type": "function",
                 "function": {"name": "f", "arguments": "{}"}}]}}]}
            out.append("data: %s\n\n" % json.dumps(c))
        out.append("data: %s\n\ndata: [DONE]\n\n" % chunk(None, "tool_calls"))
        self.wfile.write("".join(out).encode())

    def mode_same_id(self):
        calls = [{"id": "same", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                 for _ in range(20000)]
        self.send_json(200, json.dumps({
            "id": "chatcmpl-h", "object": "chat.completion", "created": 1, "model": "h",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": calls}}]}).encode())

    def mode_same_id_args(self):
        self.sse_head()
        def frag(a):
            return "data: %s\n\n" % json.dumps({"id": "c", "choices": [{"index": 0, "finish_reason": None, "delta": {
                "tool_calls": [{"index": 0, "id": "call_s", "type": "function",
                                "function": {"name": "write", "arguments": a}}]}}]})
        x = frag("x")
        self.wfile.write((frag('{"text":"') + x * 100000 + frag('"}') +
                          "data: %s\n\ndata: [DONE]\n\n" % chunk(None, "tool_calls")).encode())

    def mode_drip_slow(self):
        self.sse_head()
        limit = time.monotonic() + 30
        for b in ("data: %s\n\n" % chunk("x" * 200, role="assistant")).encode():
            if time.monotonic() > limit:
                break
            self.wfile.write(bytes([b]))
            self.wfile.flush()
            time.sleep(0.3)

    def mode_dropped_calls(self):
        calls = [{"id": "d%d" % i, "type": "function", "function": {"arguments": "{}"}}
                 for i in range(100000)]
        calls.append({"id": "ok", "type": "function", "function": {"name": "f", "arguments": "{}"}})
        self.send_json(200, json.dumps({
            "id": "chatcmpl-h", "object": "chat.completion", "created": 1, "model": "h",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": calls}}]}).encode())

    def mode_bad_choices(self):
        self.sse_head()
        self.wfile.write(b'data: {"id":"c","choices":[' + b"7," * 400000 +
                         b'{"index":0,"delta":{"role":"assistant","content":"ok"}}]}\n\n')
        self.wfile.write(("data: %s\n\ndata: [DONE]\n\n" % chunk(None, "stop")).encode())

    def big_head(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("X-Big", "b" * 20000)

    def mode_big_header(self):
        data = completion_prefix() + b"fits" + COMPLETION_SUFFIX
        self.big_head("application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def mode_big_header_stream(self):
        self.big_head("text/event-stream")
        self.end_headers()
        for c in (chunk("", role="assistant"), chunk("fits"), chunk(None, "stop")):
            self.wfile.write(("data: %s\n\n" % c).encode())
        self.wfile.write(b"data: [DONE]\n\n")


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    bomb()  # before the port is told, so no request waits for it
    print("port=%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
