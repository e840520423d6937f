#!/usr/bin/env python3
"""h1_upstream.py -- an upstream that writes its HTTP/1.1 answers byte by
byte as told, for own_client.sh: the framings and quirks a real server may
send toolgate's own client (proxy/upconn.c, proxy/h1.c).

The request's model names the answer (MODES below); every answer but the
broken ones is the same small chat stream ("hello" in two pieces, then
[DONE]). A POST to /early... is answered 413 from its head alone, the
body unread, and the connection closed. With H1_ONE_CONN set in its environment it takes one connection only,
answers its first request ("length") and closes it on the second unanswered,
its accept queue full (listen backlog 0, and one connection of its own
left in it): a client that sends again on a new connection hangs in
connect. GET /_stats gives the connections accepted and the last request's
head, as JSON. Prints port=N on stdout once it listens.
"""
import json
import os
import socket
import sys
import threading
import time
import zlib

CHUNKS = [
    {"role": "assistant", "content": "hel"},
    {"content": "lo"},
]


def sse_body():
    out = b""
    for i, d in enumerate(CHUNKS):
        c = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
        out += b"data: " + json.dumps(c).encode() + b"\n\n"
    c = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    out += b"data: " + json.dumps(c).encode() + b"\n\ndata: [DONE]\n\n"
    return out


def big_body():
    """about 6 MB of events, content "x" * 1000 each, then [DONE]"""
    c = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "x" * 1000}, "finish_reason": None}]}
    ev = b"data: " + json.dumps(c).encode() + b"\n\n"
    return ev * 5000 + b"data: [DONE]\n\n"


def chunked(body, ext=False, upper=False, trailers=False, size=7):
    out = b""
    for i in range(0, len(body), size):
        piece = body[i:i + size]
        n = "%X" % len(piece) if upper else "%x" % len(piece)
        out += n.encode() + (b";name=value" if ext else b"") + b"\r\n" + piece + b"\r\n"
    out += b"0\r\n" + (b"X-Trailer: t\r\nX-Other: o\r\n" if trailers else b"") + b"\r\n"
    return out


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def answer(mode):
    """(bytes to send, close afterwards)"""
    b = sse_body()
    if mode == "length":
        return SSE_HEAD + b"Content-Length: %d\r\n\r\n" % len(b) + b, False
    if mode == "chunked":
        return SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(b), False
    if mode == "biglength":  # more than a slow client takes: toolgate pauses
        big = big_body()
        return SSE_HEAD + b"Content-Length: %d\r\n\r\n" % len(big) + big, False
    if mode == "bigchunked":
        return SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(big_body(), size=3000), False
    if mode == "chunkext":
        return (SSE_HEAD + b"Transfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n\r\n" +
                chunked(b, ext=True, upper=True, trailers=True, size=300)), False
    if mode == "continue":
        return (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" +
                SSE_HEAD + b"Content-Length: %d\r\n\r\n" % len(b) + b), False
    if mode == "lf":
        return (b"HTTP/1.1 200 OK\nContent-Type: text/event-stream\nContent-Length: %d\n\n"
                % len(b) + b), False
    if mode == "untilclose":
        return SSE_HEAD + b"Connection: close\r\n\r\n" + b, True
    if mode == "http10":
        return (b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + b), True
    if mode == "dropidle":  # says keep-alive, then closes once answered
        return SSE_HEAD + b"Content-Length: %d\r\n\r\n" % len(b) + b, True
    if mode == "gzip":
        z = zlib.compressobj(wbits=31)
        gz = z.compress(b) + z.flush()
        return (SSE_HEAD + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(gz) +
                gz), True
    if mode == "badchunk":
        return SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n", True
    if mode == "badstatus":
        return b"HTTP/9.9 200 OK\r\n\r\n", True
    if mode == "short":  # the length promises more than comes: cut before [DONE]
        return SSE_HEAD + b"Content-Length: %d\r\n\r\n" % len(b) + b[:len(b) // 2], True
    if mode == "nothing":
        return b"", True
    if mode == "hugehead":
        return SSE_HEAD + (b"X-Big: " + b"a" * 1000 + b"\r\n") * 400 + b"\r\n", True
    if mode == "error429":
        e = b'{"error":{"message":"slow down","type":"rate_limit","code":"rate_limit"}}'
        return (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(e) + e), False
    return b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", False


class State:
    lock = threading.Lock()
    conns = 0
    dropped = 0  # requests of mode closesecond that found their connection closing
    last_head = ""


def read_request(f):
    head = b""
    while True:
        line = f.readline(65536)
        if not line:
            return None, None
        head += line
        if line in (b"\r\n", b"\n"):
            break
    if head.startswith(b"POST /early"):
        return head.decode("latin-1"), None  # the body is left unread
    n = 0
    for l in head.split(b"\r\n"):
        if l.lower().startswith(b"content-length:"):
            n = int(l.split(b":", 1)[1])
    return head.decode("latin-1"), f.read(n) if n else b""


def serve(conn):
    with conn:
        f = conn.makefile("rb")
        served = 0
        while True:
            head, body = read_request(f)
            if head is None:
                return
            if head.startswith("GET /_stats"):
                with State.lock:
                    s = json.dumps({"conns": State.conns, "dropped": State.dropped,
                                    "head": State.last_head}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(s) + s)
                continue
            with State.lock:
                State.last_head = head
            if body is None:
                # refuses the body unread, as nginx's client_max_body_size
                # does: the answer, then a close with the body unread (the
                # kernel resets the connection)
                e = b'{"error":{"message":"body too large","type":"invalid_request_error"}}'
                conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                             b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(e) + e)
                f.close()
                return
            try:
                mode = json.loads(body).get("model", "")
            except ValueError:
                mode = ""
            if mode == "closesecond" and served:
                with State.lock:
                    State.dropped += 1
                return  # a kept-alive connection closed as the next request came
            served += 1
            if mode == "drip":  # an event each 0.25 s for 3 s (chunked)
                conn.sendall(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
                ev = sse_body().split(b"\n\n")[0] + b"\n\n"
                try:
                    for i in range(12):
                        conn.sendall(b"%x\r\n" % len(ev) + ev + b"\r\n")
                        time.sleep(0.25)
                    conn.sendall(b"0\r\n\r\n")
                except OSError:
                    return
                continue
            data, close = answer("length" if mode == "closesecond" else mode)
            conn.sendall(data)
            if close:
                return


def one_conn(srv):
    """H1_ONE_CONN: one connection; the second request is left unanswered
    and its connection closed, with no room for another."""
    conn, _ = srv.accept()
    f = conn.makefile("rb")
    head, body = read_request(f)
    conn.sendall(answer("length")[0])
    head, body = read_request(f)
    filler = socket.create_connection(srv.getsockname())  # fills the accept queue
    f.close()
    conn.close()
    threading.Event().wait()
    filler.close()


def main():
    if os.environ.get("H1_ONE_CONN"):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(0)
        print("port=%d" % srv.getsockname()[1], flush=True)
        return one_conn(srv)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    print("port=%d" % srv.getsockname()[1], flush=True)
    while True:
        c, _ = srv.accept()
        with State.lock:
            State.conns += 1
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
