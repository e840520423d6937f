#!/usr/bin/env python3
"""hostile_redis.py -- a Redis that attacks (or slows) the proxy in front of it.

    hostile_redis.py MODE [MARK_FILE] [UPSTREAM_PORT DELAY_MS]

Prints "port=N" once listening. Each command it reads touches MARK_FILE
(when given), so a test knows a request reached it. Modes:

  huge   answers any command with "*999999999" and then an endless stream
         of integer elements (hiredis 0.14 allocates the array the header
         announces, then fills it)
  drip   answers any command with a bulk string sent one byte every 100 ms,
         for 10 s: never silent long enough for a read timeout
  slow   a proxy to a real Redis on UPSTREAM_PORT that holds each reply
         DELAY_MS before passing it on (the bench's slow Redis)
"""
import os
import socket
import sys
import threading
import time

MODE = sys.argv[1]
MARK = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None


def mark():
    if MARK:
        with open(MARK, "a") as f:
            f.write("command\n")


def serve_huge(c):
    c.recv(65536)
    mark()
    c.sendall(b"*999999999\r\n")
    block = b":1\r\n" * 16384
    limit = time.monotonic() + 60
    while time.monotonic() < limit:
        c.sendall(block)


def serve_drip(c):
    while True:
        if not c.recv(65536):
            return
        mark()
        body = b"x" * 100
        for b in b"$100\r\n" + body + b"\r\n":
            c.sendall(bytes([b]))
            time.sleep(0.1)


def serve_slow(c, port, delay):
    up = socket.create_connection(("127.0.0.1", port))

    def down():  # Redis -> client, each read held DELAY_MS
        while True:
            d = up.recv(1 << 20)
            if not d:
                break
            time.sleep(delay / 1000.0)
            c.sendall(d)
        c.close()

    threading.Thread(target=down, daemon=True).start()
    while True:
        d = c.recv(1 << 20)
        if not d:
            break
        mark()
        up.sendall(d)
    up.close()


def handle(c):
    try:
        if MODE == "huge":
            serve_huge(c)
        elif MODE == "drip":
            serve_drip(c)
        else:
            serve_slow(c, int(sys.argv[3]), int(sys.argv[4]))
    except OSError:
        pass
    finally:
        try:
            c.close()
        except OSError:
            pass


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    print("port=%d" % s.getsockname()[1], flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
