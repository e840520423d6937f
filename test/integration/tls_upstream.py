"""tls_upstream.py -- an https chat-completions upstream for tls.sh.

python3 tls_upstream.py silent: takes TCP connections (the kernel's
backlog) and never answers a TLS handshake (a warm-up that cannot end).

python3 tls_upstream.py CERT KEY [CLIENT_CA]: serves HTTP/1.1 over TLS on a
free loopback port (prints port=N), with the certificate and key given;
with CLIENT_CA it asks every client for a certificate signed by that CA
(mTLS) and refuses a handshake without one. Every POST gets one chat
completion whose content names the path and, when the client showed one,
the client certificate's common name, and which of toolgate's clients
sent it (its own asks Accept-Encoding: identity, libcurl lists codings); GET /_stats answers the number of
TLS handshakes and of those that resumed a session. Under /close/ every
answer closes its connection.
"""
import json
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

if sys.argv[1] == "silent":
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(64)
    print("port=%d" % lst.getsockname()[1], flush=True)
    threading.Event().wait()
cert, key = sys.argv[1], sys.argv[2]
client_ca = sys.argv[3] if len(sys.argv) > 3 else None
stats = {"handshakes": 0, "resumed": 0}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.path.startswith("/close/"):  # each answer ends its connection
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            self._send(dict(stats))

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        peer = self.connection.getpeercert()
        cn = ""
        if peer:
            for rdn in peer.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
        ae = self.headers.get("Accept-Encoding", "-")
        via = "own" if ae == "identity" else "curl"
        text = "tls ok path=%s client=%s via=%s" % (self.path, cn or "-", via)
        self._send({"id": "chatcmpl-tls", "object": "chat.completion", "created": 1,
                    "model": req.get("model", "m"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def get_request(self):
        sock, addr = self.socket.accept()
        try:
            tls = ctx.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError):
            sock.close()
            raise
        with lock:
            stats["handshakes"] += 1
            if tls.session_reused:
                stats["resumed"] += 1
        return tls, addr

    def handle_error(self, request, client_address):
        pass


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
if client_ca:
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(client_ca)
srv = Server(("127.0.0.1", 0), Handler)
print("port=%d" % srv.server_address[1], flush=True)
try:
    srv.serve_forever()
except KeyboardInterrupt:
    pass
