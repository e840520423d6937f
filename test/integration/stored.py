#!/usr/bin/env python3
"""stored.py -- the Responses API's stored-response endpoints on a route
that bridges the API over chat (proxy/stored.c), answered from toolgate's
store in the shapes of openai-node 7.60's types:

    stored.py TOOLGATE_URL [PATH_PREFIX [READ_URL]]

GET /v1/responses/{id} gives back the Response a whole and a streamed
request answered (Response), or replays it as its event stream
(stream=true, starting_after); GET .../input_items lists the request's
input (ResponseItemList: order, limit, after, before; a bad limit is the
API's 400 naming it); DELETE answers {id, object: response.deleted,
deleted: true} and the id is gone for GET, previous_response_id and its
items' item_reference; cancel of a response not run in the background is
a 400; store: false leaves nothing; POST /v1/responses/compact answers
a CompactedResponse whose output goes on as input; another client's id (another provider
key) is the API's 404, word for word the one of an unknown id. READ_URL
(another replica sharing the store) serves the reads when given. Prints
one line per check, exits 1 when one failed.
"""
import json
import sys
import urllib.error
import urllib.request

from tally import check, finish

BASE = sys.argv[1].rstrip("/") + (sys.argv[2] if len(sys.argv) > 2 else "")
READ = (sys.argv[3].rstrip("/") + (sys.argv[2] if len(sys.argv) > 2 else "")
        if len(sys.argv) > 3 else BASE)
X = {"Authorization": "Bearer sk-stored-x-0123456789"}
Y = {"Authorization": "Bearer sk-stored-y-0123456789"}


def call(method, path, headers, body=None, base=None):
    data = json.dumps(body).encode() if body is not None else None
    h = dict(headers)
    if data is not None:
        h["Content-Type"] = "application/json"
    req = urllib.request.Request((base or READ) + path, data, h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers.get("Content-Type", "")


def post(headers, body):
    return call("POST", "/v1/responses", headers, body, BASE)


def loads(text):
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text[:300]}


def events(text):
    return [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: ")]


# ---- a whole and a streamed Response, read back ------------------------------

st, t, _ = post(X, {"model": "gpt-4o", "instructions": "be brief",
                    "input": [{"role": "user", "content": "one"},
                              {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
                              {"role": "user", "content": "three"}]})
whole = loads(t)
rid = whole.get("id", "resp_missing")
st2, t2, _ = post(X, {"model": "gpt-4o", "stream": True, "input": "a streamed one"})
done = [e["response"] for e in events(t2) if e.get("type") == "response.completed"]
sid = done[0]["id"] if done else "resp_missing"
check("a whole and a streamed Response are made", "200 200 1", "%d %d %d" % (st, st2, len(done)))

s, t, ct = call("GET", "/v1/responses/" + rid, X)
got = loads(t)
check("GET /v1/responses/{id}: the whole Response, as it was answered",
      [200, "response", rid, whole.get("output"), "completed", True, "be brief"],
      [s, got.get("object"), got.get("id"), got.get("output"), got.get("status"),
       got.get("store"), got.get("instructions")])
check("GET: every field of the Response it answered, the same",
      sorted(whole.keys()), sorted(got.keys()))
s, t, _ = call("GET", "/v1/responses/" + sid, X)
got = loads(t)
check("GET: the streamed Response, as response.completed gave it",
      [200, sid, done[0]["output"] if done else None, done[0]["usage"] if done else None],
      [s, got.get("id"), got.get("output"), got.get("usage")])

# ---- stream=true: replayed as events ----------------------------------------

s, t, ct = call("GET", "/v1/responses/%s?stream=true" % rid, X)
ev = events(t)
types = [e.get("type") for e in ev]
check("GET stream=true: an event stream, response.created first, response.completed last",
      [200, True, "response.created", "response.completed"],
      [s, ct.startswith("text/event-stream"), types[0] if types else None,
       types[-1] if types else None])
check("GET stream=true: sequence numbers 0, 1, 2...", list(range(len(ev))),
      [e.get("sequence_number") for e in ev])
text = "".join(e.get("delta", "") for e in ev if e.get("type") == "response.output_text.delta")
want_text = "".join(p.get("text", "") for i in whole.get("output", []) if i.get("type") == "message"
                    for p in i.get("content", []))
check("GET stream=true: the deltas make the text, the last event the Response",
      [want_text, whole.get("output")], [text, ev[-1].get("response", {}).get("output") if ev else None])
s, t, _ = call("GET", "/v1/responses/%s?stream=true&starting_after=2" % rid, X)
check("GET stream=true&starting_after=2: the events after the third",
      [e.get("sequence_number") for e in ev[3:]], [e.get("sequence_number") for e in events(t)])

# ---- input_items --------------------------------------------------------------

s, t, _ = call("GET", "/v1/responses/%s/input_items" % rid, X)
lst = loads(t)
data = lst.get("data", [])
check("input_items: a list, newest first (order desc by default), each a message with an id",
      [200, "list", ["three", "two", "one"], False, True],
      [s, lst.get("object"), [m.get("content", [{}])[0].get("text") for m in data],
       lst.get("has_more"), all(isinstance(m.get("id"), str) and m.get("type") == "message"
                                and m.get("content", [{}])[0].get("type") == "input_text"
                                for m in data)])
check("input_items: first_id and last_id name the ends",
      [data[0]["id"] if data else None, data[-1]["id"] if data else None],
      [lst.get("first_id"), lst.get("last_id")])
s, t, _ = call("GET", "/v1/responses/%s/input_items?order=asc&limit=2" % rid, X)
page = loads(t)
check("input_items order=asc&limit=2: the first two, has_more",
      [200, ["one", "two"], True],
      [s, [m.get("content", [{}])[0].get("text") for m in page.get("data", [])],
       page.get("has_more")])
s, t, _ = call("GET", "/v1/responses/%s/input_items?order=asc&limit=2&after=%s"
               % (rid, page.get("last_id")), X)
page2 = loads(t)
check("input_items after=<last_id>: the rest, no more",
      [200, ["three"], False],
      [s, [m.get("content", [{}])[0].get("text") for m in page2.get("data", [])],
       page2.get("has_more")])
s, t, _ = call("GET", "/v1/responses/%s/input_items?order=asc&before=%s" % (rid, data[0]["id"] if data else "x"), X)
check("input_items before=<id>: the items before it",
      [200, ["one", "two"]],
      [s, [m.get("content", [{}])[0].get("text") for m in loads(t).get("data", [])]])
s, t, _ = call("GET", "/v1/responses/%s/input_items?limit=0" % rid, X)
check("input_items limit=0: the API's 400 naming limit", [400, "limit"],
      [s, loads(t).get("error", {}).get("param")])

# ---- another client, unknown ids ------------------------------------------------

def not_found(s, t, rid_):
    e = loads(t).get("error", {})
    return [s, e.get("type"), e.get("message", "").replace(rid_, "ID")]


unknown = "resp_nosuchresponseanywhere000000"
want = not_found(*call("GET", "/v1/responses/" + unknown, X)[:2], unknown)
check("an unknown id: the API's 404", [404, "invalid_request_error",
                                         "Response with id 'ID' not found."], want)
for what, method, path in [("GET", "GET", "/v1/responses/%s"),
                           ("input_items", "GET", "/v1/responses/%s/input_items"),
                           ("DELETE", "DELETE", "/v1/responses/%s"),
                           ("cancel", "POST", "/v1/responses/%s/cancel")]:
    s, t, _ = call(method, path % rid, Y, {} if method == "POST" else None)
    check("another client's %s of X's response: the 404 of an unknown id" % what, want,
          not_found(s, t, rid))

# ---- cancel, store: false, a client that sends its whole history -----------------

s, t, _ = call("POST", "/v1/responses/%s/cancel" % rid, X, {})
check("cancel of a response not run in the background: a 400", [400, "invalid_request_error"],
      [s, loads(t).get("error", {}).get("type")])
s, t, _ = post(X, {"model": "gpt-4o", "store": False, "input": "not kept"})
nid = loads(t).get("id", "resp_missing")
s2, t2, _ = call("GET", "/v1/responses/" + nid, X)
check("store: false: answered with store false, and not kept", [200, False, 404],
      [s, loads(t).get("store"), s2])
s, t, _ = post(X, {"model": "gpt-4o", "input": [{"role": "user", "content": "hi"},
                                                 {"role": "assistant", "content": "hello"},
                                                 {"role": "user", "content": "again"}]})
hid = loads(t).get("id", "resp_missing")
s2, _, _ = call("GET", "/v1/responses/" + hid, X)
s3, t3, _ = call("GET", "/v1/responses/%s/input_items" % hid, X)
check("a client that sends its whole history: its Response is read back, its input is not kept",
      [200, 200, 404], [s, s2, s3])

# ---- compact ----------------------------------------------------------------------

s, t, _ = call("POST", "/v1/responses/compact", X,
               {"model": "gpt-4o", "previous_response_id": sid,
                "input": [{"role": "user", "content": "and fix it"}]}, BASE)
cp = loads(t)
out = cp.get("output", [])
check("compact: a CompactedResponse, the user messages then one compaction item",
      [200, "response.compaction", ["message", "message", "compaction"], "toolgate:", True],
      [s, cp.get("object"), [i.get("type") for i in out],
       (out[-1].get("encrypted_content", "") if out else "")[:9],
       isinstance(cp.get("usage", {}).get("total_tokens"), int)])
s, t, _ = post(X, {"model": "gpt-4o", "input": out + [{"role": "user", "content": "go on"}]})
check("the compacted output goes on as a later request's input", 200, s)

# ---- DELETE --------------------------------------------------------------------

item = next((i["id"] for i in whole.get("output", []) if i.get("id")), "msg_missing")
s, t, _ = call("DELETE", "/v1/responses/" + rid, X)
check("DELETE: {id, object: response.deleted, deleted: true}",
      [200, {"id": rid, "object": "response.deleted", "deleted": True}], [s, loads(t)])
s, t, _ = call("GET", "/v1/responses/" + rid, X)
check("after DELETE, GET is the 404", want, not_found(s, t, rid))
s, t, _ = post(X, {"model": "gpt-4o", "previous_response_id": rid, "input": "and then?"})
check("after DELETE, previous_response_id names no response",
      [400, "previous_response_not_found"], [s, loads(t).get("error", {}).get("code")])
s, t, _ = post(X, {"model": "gpt-4o", "input": [{"type": "item_reference", "id": item},
                                                 {"role": "user", "content": "x"}]})
check("after DELETE, its items are not found either", 400, s)
s, t, _ = call("DELETE", "/v1/responses/" + rid, X)
check("a second DELETE: the 404", 404, s)
s, t, _ = post(X, {"model": "gpt-4o", "previous_response_id": sid, "input": "and then?"})
check("the other response still continues", 200, s)
finish()
