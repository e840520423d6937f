#!/usr/bin/env python3
"""owners.py -- two clients told apart by their provider keys alone (no
client_keys: the owner is the credential they carry, docs/security.md)
keep their Responses items and previous_response_id chains apart.

    owners.py TOOLGATE_URL [PATH_PREFIX]

Client X (Authorization: Bearer sk-owner-x...) answers a whole and a
streamed Response; client Y, with another key in each header toolgate
reads a credential from, then names X's response ids and item id: each is
refused exactly like an unknown id, while X continues both chains. Prints
one line per check and exits 1 when one failed (the suites run it through
lib.sh's check). A store that gave every client one owner answers Y's
references with 200, and fails here.
"""
import json
import sys
import urllib.error
import urllib.request

from tally import check, finish

URL = sys.argv[1].rstrip("/") + (sys.argv[2] if len(sys.argv) > 2 else "")
X = {"Authorization": "Bearer sk-owner-x-0123456789"}
YS = [("Authorization", {"Authorization": "Bearer sk-owner-y-0123456789"}),
      ("x-api-key", {"x-api-key": "sk-owner-y-0123456789"}),
      ("x-upstream-authorization", {"x-upstream-authorization": "Bearer sk-owner-y-01234"})]


def post(headers, body):
    req = urllib.request.Request(URL + "/v1/responses", json.dumps(body).encode(),
                                 dict(headers, **{"Content-Type": "application/json"}))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def error_code(text):
    try:
        return json.loads(text)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return text[:200]


st, whole = post(X, {"model": "gpt-4o", "input": "remember the word kumquat"})
whole = json.loads(whole) if st == 200 else {}
st2, streamed = post(X, {"model": "gpt-4o", "stream": True, "input": "and the word quince"})
done = [json.loads(l[6:]) for l in streamed.splitlines() if l.startswith("data: ")]
done = [e["response"] for e in done if e.get("type") == "response.completed"]
check("client X: a whole and a streamed Response, both kept", "200 200 2",
      "%d %d %d" % (st, st2, len([r for r in [whole.get("id")] + [d.get("id") for d in done] if r])))
rid_whole = whole.get("id", "resp_missing")
rid_stream = done[0]["id"] if done else "resp_missing"
item = whole.get("output", [{}])[0].get("id", "msg_missing")

for hname, y in YS:
    got = []
    for rid in (rid_whole, rid_stream):
        s, t = post(y, {"model": "gpt-4o", "previous_response_id": rid, "input": "x"})
        got.append("%d %s" % (s, error_code(t)))
    s, t = post(y, {"model": "gpt-4o", "input": [{"type": "item_reference", "id": item},
                                                 {"role": "user", "content": "x"}]})
    su, tu = post(y, {"model": "gpt-4o", "input": [
        {"type": "item_reference", "id": "msg_0_nosuchitemanywhere00000000"},
        {"role": "user", "content": "x"}]})
    same = json.loads(t).get("error", {}).get("message", "").replace(item, "ID") == \
        json.loads(tu).get("error", {}).get("message", "").replace(
            "msg_0_nosuchitemanywhere00000000", "ID") if s == su == 400 else False
    got.append("%d %s" % (s, same))
    check("client Y (%s): X's two chains and X's item are not found" % hname,
          ["400 previous_response_not_found"] * 2 + ["400 True"], got)

got = []
for rid in (rid_whole, rid_stream):
    s, t = post(X, {"model": "gpt-4o", "previous_response_id": rid, "input": "and then?"})
    got.append(s)
s, t = post(X, {"model": "gpt-4o", "input": [{"type": "item_reference", "id": item},
                                             {"role": "user", "content": "x"}]})
got.append(s)
check("client X itself continues both chains and references its item", [200, 200, 200], got)
finish()
