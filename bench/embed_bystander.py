#!/usr/bin/env python3
"""embed_bystander.py -- how long a bystander waits while another client's
fresh catalog is embedded (issue 28 F1). bench/embed_bystander.sh starts
the pieces; this is the slow embeddings endpoint and the clients:

    embed_bystander.py serve DELAY_MS         # prints port=N, then serves
    embed_bystander.py run TOOLGATE_URL TOOLS

serve: an OpenAI-shaped POST /v1/embeddings that answers each call after
DELAY_MS with deterministic 32-dimension vectors (a stand-in, no model).
run: client A sends one discovery request (the mock's scripted search)
with a fresh catalog of TOOLS tools; client B, on the same one-worker
toolgate, sends a small chat request every 50 ms meanwhile. Prints A's
time and B's worst and median wait.
"""
import hashlib
import http.client
import http.server
import json
import socketserver
import sys
import threading
import time
import urllib.parse
import os

LOG = os.environ.get("EMBED_LOG")


def serve(delay_ms):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if LOG:
                sys.stderr.write("embed call: %d inputs\n" % len(body["input"]))
            time.sleep(delay_ms / 1000.0)
            inp = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = []
            for i, t in enumerate(inp):
                h = hashlib.sha256(t.encode()).digest()
                data.append({"object": "embedding", "index": i,
                             "embedding": [b / 255.0 - 0.5 for b in h]})
            out = json.dumps({"object": "list", "data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            try:
                self.wfile.write(out)
            except OSError:
                pass  # a call cut at the request's budget

    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    s = S(("127.0.0.1", 0), H)
    print("port=%d" % s.server_address[1], flush=True)
    s.serve_forever()


def run(base, tools):
    url = urllib.parse.urlparse(base)
    stamp = str(time.time())  # a fresh catalog: not in any cache
    cat = [{"type": "function", "function": {
        "name": "tool_%d" % i, "description": "Do thing %d of batch %s." % (i, stamp),
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}
        for i in range(tools)]
    a_body = json.dumps({"model": "m", "tools": cat,
                         "messages": [{"role": "user", "content": "do thing 7"}]})
    b_body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    done = threading.Event()
    waits, a_time = [], []

    def post(path, body, headers):
        c = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
        c.request("POST", path, body, dict(headers, **{"Content-Type": "application/json"}))
        r = c.getresponse()
        text = r.read()
        c.close()
        if LOG and "X-Mock" in headers:
            sys.stderr.write("A's answer: %s\n" % text[:400].decode(errors="replace"))
        return r.status

    def client_a():
        t = time.monotonic()
        st = post("/disc/v1/chat/completions", a_body, {"X-Mock": "discovery"})
        a_time.append((time.monotonic() - t, st))
        done.set()

    th = threading.Thread(target=client_a)
    th.start()
    time.sleep(0.2)  # A's request is in
    while not done.is_set():
        t = time.monotonic()
        post("/plain/v1/chat/completions", b_body, {})
        waits.append(time.monotonic() - t)
        time.sleep(0.05)
    th.join()
    waits.sort()
    print("A: %d tools, %.2f s, status %d" % (tools, a_time[0][0], a_time[0][1]))
    if waits:
        print("B: %d requests, worst %.0f ms, median %.0f ms"
              % (len(waits), waits[-1] * 1000, waits[len(waits) // 2] * 1000))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        run(sys.argv[2], int(sys.argv[3]))
