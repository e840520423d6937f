#!/usr/bin/env python3
"""bystander.py -- how long a bystander waits while another client's
Responses chain is read from a slow Redis (issue 28 F3). bench/bystander.sh
starts the pieces; this is the clients:

    bystander.py TOOLGATE_URL TURNS

Client A runs TURNS turns of one previous_response_id chain (each turn
reads the whole chain so far); client B, on the same one-worker toolgate,
sends a small chat request every 50 ms meanwhile. Prints A's turns and B's
worst and median wait.
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse

url = urllib.parse.urlparse(sys.argv[1])
turns = int(sys.argv[2])
stop = threading.Event()
waits = []


def conn():
    return http.client.HTTPConnection(url.hostname, url.port, timeout=120)


def post(c, path, body):
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read()


def bystander():
    c = conn()
    while not stop.is_set():
        t0 = time.monotonic()
        st, _ = post(c, "/v1/chat/completions",
                     {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
        waits.append((time.monotonic() - t0) * 1000)
        assert st == 200, st
        time.sleep(0.05)


a = conn()
prev = None
t_turns = []
th = threading.Thread(target=bystander)
th.start()
for i in range(turns):
    body = {"model": "gpt-4o", "input": "turn %d" % i}
    if prev:
        body["previous_response_id"] = prev
    t0 = time.monotonic()
    st, data = post(a, "/v1/responses", body)
    t_turns.append((time.monotonic() - t0) * 1000)
    assert st == 200, (st, data[:300])
    prev = json.loads(data)["id"]
stop.set()
th.join()
waits.sort()
print("A: %d turns, last turn %.0f ms, slowest turn %.0f ms" % (turns, t_turns[-1], max(t_turns)))
print("B: %d requests, worst wait %.1f ms, median %.1f ms" % (len(waits), waits[-1],
                                                              waits[len(waits) // 2]))
