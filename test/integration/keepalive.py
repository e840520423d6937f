#!/usr/bin/env python3
"""keepalive.py PORT [AUTHORIZATION] -- one kept-alive connection through
the ways a parked connection (proxy/front.c) is woken: its next request at
once, after a pause the sweep resumes it in, two requests in one write
(pipelined), a head sent in two parts, and a request followed by the
client's close of its side. Prints the answers' status codes."""
import socket
import sys
import time

PORT = int(sys.argv[1])
AUTH = sys.argv[2] if len(sys.argv) > 2 else ""
BODY = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
REQ = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
       b"Content-Type: application/json\r\n"
       + (b"Authorization: " + AUTH.encode() + b"\r\n" if AUTH else b"")
       + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)


class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", PORT))
        self.s.settimeout(10)
        self.buf = b""

    def more(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def answers(self, n):
        """The status codes of the next n answers (Content-Length bodies)."""
        got = []
        for _ in range(n):
            while b"\r\n\r\n" not in self.buf:
                self.more()
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            cl = next(int(line.split(b":")[1]) for line in lines
                      if line.lower().startswith(b"content-length:"))
            while len(self.buf) < cl:
                self.more()
            self.buf = self.buf[cl:]
            got.append(lines[0].split(b" ")[1].decode())
        return got


def main():
    c = Conn()
    out = []
    try:
        c.s.sendall(REQ)
        out += c.answers(1)
        time.sleep(0.02)  # parked: woken by its bytes
        c.s.sendall(REQ)
        out += c.answers(1)
        time.sleep(0.5)  # resumed by the sweep before its next request
        c.s.sendall(REQ)
        out += c.answers(1)
        c.s.sendall(REQ + REQ)  # pipelined
        out += c.answers(2)
        c.s.sendall(REQ[:20])  # a head in two parts
        time.sleep(0.05)
        c.s.sendall(REQ[20:])
        out += c.answers(1)
        c.s.sendall(REQ)  # then the client closes its side
        time.sleep(0.01)
        c.s.shutdown(socket.SHUT_WR)
        out += c.answers(1)
    except (EOFError, OSError) as e:
        out.append("error:%s" % type(e).__name__)
    print(" ".join(out))


main()
