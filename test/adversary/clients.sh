#!/bin/sh
# test/adversary/clients.sh -- hostile clients against a toolgate that
# several clients share (client_keys set), each case asserting the
# documented outcome (docs/security.md):
#   - one client cannot read another's Responses items (item_reference), and
#     its flood of items cannot evict all of the other's;
#   - ids toolgate hands out are 130 random bits, not a generator's sequence;
#   - a client without a key is answered 401 on its headers: its body is
#     never read, and toolgate's peak RSS stays flat under 100 such 1 MB bodies;
#   - bodies held at once stay under max_body_memory (503 past it), and
#     connections per address under max_conns_per_ip;
#   - paths with dot segments (raw, %2e, %2f, double-encoded) are refused
#     and never reach the upstream;
#   - toolgate's client key never goes upstream; cookies and the client's
#     x-api-key do not go beside a route's api_key;
#   - upstream userinfo and query never show in a 502 or a log line;
#   - /metrics asks for a key.
# TAP, POSIX sh; run with TG_BIN / TG_MOCK set (test/run.sh sets them).
. "$(dirname "$0")/../integration/lib.sh"

start_mock -v
PORT=$(free_port)
DEAD=$(free_port)  # nothing listens there
CONF="$TG_TMP/adv.conf"
KA=key-alpha-0123456789
KB=key-bravo-0123456789
cat >"$CONF" <<EOF
[server]
listen = 127.0.0.1:$PORT
threads = 2
log_level = info
max_body = 2M
responses_store = 24K
client_keys = $KA, $KB

[route main]
models = gpt-*
upstream = http://127.0.0.1:$MOCK_PORT/v1
dialect = openai

[route keyed]
prefix = /keyed
upstream = http://127.0.0.1:$MOCK_PORT/v1
api_key = sk-route-secret
dialect = openai

[route claude]
prefix = /claude
upstream = http://127.0.0.1:$MOCK_PORT/v1
dialect = anthropic

[route leaky]
prefix = /leaky
upstream = http://alice:hunter2@127.0.0.1:$DEAD/v1?key=sekrit-query
dialect = openai
retries = 1
EOF
start_toolgate "$CONF" || exit 1
A="Authorization: Bearer $KA"
B="Authorization: Bearer $KB"
JSON='Content-Type: application/json'
O="$TG_TMP/o"

# vmhwm: toolgate's peak resident set so far, in KB.
vmhwm() {
    sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$TG_PID/status"
}

# ---- 1. Responses items belong to their owner ------------------------------
respond() {  # respond OUT AUTH BODY
    tg_req "$1" POST /v1/responses -H "$2" -H "$JSON" --data-binary "$3"
}
code=$(respond "$O.a1" "$A" '{"model":"gpt-4o","input":"remember the word kumquat"}')
a_item=$(json_get "$O.a1" output.0.id)
expect_eq "client A's Responses request answered, an item id handed out" "200 msg" \
    "$code $(printf '%s' "$a_item" | cut -c1-3)"
ref() {  # ref ID: a body that references item ID
    printf '{"model":"gpt-4o","input":[{"type":"item_reference","id":"%s"},{"role":"user","content":"and then?"}]}' "$1"
}
code=$(respond "$O.a2" "$A" "$(ref "$a_item")")
expect_eq "A references its own item: 200" 200 "$code"
code=$(respond "$O.b1" "$B" "$(ref "$a_item")")
codeu=$(respond "$O.b2" "$B" "$(ref msg_0_nosuchitemanywhere00000000)")
msg_b=$(json_get "$O.b1" error.message | sed "s/$a_item/ID/")
msg_u=$(json_get "$O.b2" error.message | sed "s/msg_0_nosuchitemanywhere00000000/ID/")
expect_eq "B references A's item: the same 400 as an unknown id" "400 400 $msg_u" "$code $codeu $msg_b"
if grep -q kumquat "$O.b1"; then not_ok "B's answer holds nothing of A's item" "$(cat "$O.b1")"; else ok "B's answer holds nothing of A's item"; fi

# B floods the store (24K) with its own items, ten times over.
"$PY" - "$TG_URL" "$KB" <<'EOF'
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
body = '{"model":"gpt-4o","input":"%s"}' % ("fill " * 20)
for i in range(160):
    c.request("POST", "/v1/responses", body, {"Authorization": "Bearer " + sys.argv[2],
                                               "Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
EOF
code=$(respond "$O.a3" "$A" "$(ref "$a_item")")
expect_eq "after B's flood of 160 responses, A's item is still there" 200 "$code"

# ---- 1. ids: 130 random bits, no sequence ----------------------------------
"$PY" - "$TG_URL" "$O.ids" <<'EOF'
import http.client, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
with open(sys.argv[2], "w") as f:
    for i in range(1000):
        c.request("GET", "/healthz")
        r = c.getresponse()
        r.read()
        f.write(r.getheader("X-Request-Id", "") + "\n")
EOF
check "1000 request ids: distinct, tg- and 26 base32 characters, every position spread" \
    "$PY" - "$O.ids" <<'EOF'
import re, sys, collections
ids = open(sys.argv[1]).read().split()
assert len(ids) == 1000 and len(set(ids)) == 1000, "not 1000 distinct ids"
bad = [i for i in ids if not re.fullmatch(r"tg-[a-z2-7]{26}", i)]
assert not bad, "format: %s" % bad[:3]
for k in range(3, 29):  # each position ~31 of each of 32 characters
    n = collections.Counter(i[k] for i in ids)
    assert len(n) == 32 and max(n.values()) < 70, (k, n.most_common(3))
# consecutive ids share no more than chance: no counter, no shifted state
same = sum(a[k] == b[k] for a, b in zip(ids, ids[1:]) for k in range(3, 29))
assert same < 999 * 26 / 32 * 1.5, same
EOF
resp_id=$(json_get "$O.a1" id)
expect_match "Responses and item ids carry a fresh 26-character random name" \
    '^resp_[a-z2-7]{26} msg_0_[a-z2-7]{26}$' "$resp_id $a_item"

# ---- 7. no key: 401 on the headers, the body never read ----------------------
check "headers of a 1 MB body without a key: 401 before a byte of the body is sent" \
    "$PY" - "$PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: 1048576\r\n\r\n")
head = s.recv(4096)
assert head.startswith(b"HTTP/1.1 401"), head[:200]
EOF
hwm0=$(vmhwm)
t0=$(now_ms)
"$PY" - "$PORT" >"$O.flood" <<'EOF'
import socket, sys, threading
port, body = int(sys.argv[1]), b"x" * (1 << 20)
codes = []
def one():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        try:
            s.sendall(body)
        except OSError:
            pass  # refused on the headers: the connection is closed under us
        codes.append(s.recv(64)[9:12].decode())
    except OSError as e:
        codes.append("err")
ts = [threading.Thread(target=one) for _ in range(100)]
[t.start() for t in ts]
[t.join() for t in ts]
print(" ".join(sorted(set(codes))), len(codes))
EOF
t1=$(now_ms)
hwm1=$(vmhwm)
echo "# 100 unauthenticated 1 MB bodies: VmHWM $hwm0 -> $hwm1 KB, $((t1 - t0)) ms"
expect_eq "100 unauthenticated 1 MB bodies at once: all 401" "401 100" "$(cat "$O.flood")"
if [ $((hwm1 - hwm0)) -lt 20000 ]; then
    ok "... and toolgate's peak RSS grew by less than 20 MB ($((hwm1 - hwm0)) KB)"
else
    not_ok "... and toolgate's peak RSS grew by less than 20 MB" "VmHWM $hwm0 -> $hwm1 KB"
fi

# ---- 8. dot segments: refused, never forwarded ---------------------------------
before=$(grep -c '^mock: ' "$TG_TMP/mock.err")
for p in '/keyed/v1/../../other/v1/models' '/keyed/v1/..%2f..%2fadmin' \
    '/keyed/v1/%2e%2e/%2e%2e/admin' '/keyed/v1/%2E%2E%2Fadmin' '/keyed/v1/%252e%252e/admin' \
    '/v1/./models' '/keyed/v1/models/..' '/keyed/v1/a%5c..%5cadmin' \
    '/keyed/v1/..;/..;/admin' '/keyed/v1/%2e%2e;/admin' '/keyed/v1/..%3b/admin' \
    '/keyed/v1/%2e%2e%3b/admin' '/keyed/v1/%2E%2e%3B/admin' '/keyed/v1/..%253b/admin'; do
    code=$(curl -s --path-as-is -m 5 -o "$O.dot" -w '%{http_code}' -H "$A" "$TG_URL$p")
    expect_eq "GET $p: 400 invalid_path" "400 invalid_path" "$code $(json_get "$O.dot" error.code)"
done
code=$(curl -s --path-as-is -m 5 -o "$O.dot" -w '%{http_code}' -H "$A" -H "$JSON" \
    -H 'anthropic-version: 2023-06-01' --data-binary '{}' "$TG_URL/claude/v1/messages/../../admin")
expect_eq "POST /claude/v1/messages/../../admin: 400 in Anthropic's shape" "400 error" \
    "$code $(json_get "$O.dot" type)"
after=$(grep -c '^mock: ' "$TG_TMP/mock.err")
expect_eq "no dot-segment request reached the upstream" "$before" "$after"
code=$(curl -s -m 5 -o "$O.dot" -w '%{http_code}' -H "$A" "$TG_URL/keyed/v1/models")
expect_eq "a plain pass-through path still passes" 200 "$code"

# ---- 9. toolgate's client key never goes upstream ------------------------------
# Each check first asks that the request was answered and reached the
# mock: a request refused or never forwarded sends no key either, and
# must not pass for one that kept it back.
mock_reset
code=$(chat "$O.k" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' -H "$A" \
    -H "x-api-key: $KA")
mock_last "$O.last"
expect_eq "route without api_key: answered 200, one request upstream" "200 1 /v1/chat/completions" \
    "$code $(mock_count) $(json_get "$O.last" path)"
if grep -q "$KA" "$O.last"; then not_ok "route without api_key: the client key is in no header upstream" "$(json_get "$O.last" headers)"; else ok "route without api_key: the client key is in no header upstream"; fi
expect_eq "... and no Authorization goes up at all" "" "$(json_get "$O.last" headers.authorization)"
mock_reset
code=$(chat "$O.k" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' -H "$A" \
    -H 'x-upstream-authorization: Bearer sk-client-own-provider-key')
mock_last "$O.last"
expect_eq "x-upstream-authorization: answered 200, one request upstream" "200 1" "$code $(mock_count)"
expect_eq "x-upstream-authorization goes up as Authorization, itself not forwarded" \
    "Bearer sk-client-own-provider-key|" \
    "$(json_get "$O.last" headers.authorization)|$(json_get "$O.last" headers.x-upstream-authorization)"
mock_reset
tg_req "$O.k" POST /claude/v1/messages -H "$A" -H "$JSON" -H 'x-api-key: sk-ant-client-own' \
    -H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: tools-2024' \
    --data-binary '{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$O.last"
expect_eq "Messages pass-through: the client's x-api-key and anthropic-* go up, toolgate's key does not" \
    "/v1/messages sk-ant-client-own 2023-06-01 tools-2024 " \
    "$(json_get "$O.last" path) $(json_get "$O.last" headers.x-api-key) $(json_get "$O.last" headers.anthropic-version) $(json_get "$O.last" headers.anthropic-beta) $(json_get "$O.last" headers.authorization)"

# ---- 12. the header allow-list beside a route's api_key -------------------------
mock_reset
tg_req "$O.k" POST /keyed/v1/chat/completions -H "$A" -H "$JSON" -H 'Cookie: session=s3cr3t-cookie' \
    -H 'x-api-key: sk-client-own' -H 'X-Forwarded-For: 10.0.0.1' -H 'OpenAI-Project: proj-1' \
    --data-binary '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$O.last"
expect_eq "route with api_key: its key goes up; no cookie, client x-api-key or X-Forwarded-For" \
    "Bearer sk-route-secret|||" \
    "$(json_get "$O.last" headers.authorization)|$(json_get "$O.last" headers.cookie)|$(json_get "$O.last" headers.x-api-key)|$(json_get "$O.last" headers.x-forwarded-for)"
expect_eq "... while OpenAI-Project (on the allow-list) goes up" "proj-1" \
    "$(json_get "$O.last" headers.openai-project)"

# ---- 12. a bare CR in a header value never starts a header upstream ----------------
# libmicrohttpd keeps a CR that no LF follows; an upstream that ends lines
# at CR would read "Injected: 1" as a header of its own. Both upstream
# clients: a chat request (toolgate's own) and a passed one (libcurl).
raw_cr() {  # raw_cr PATH BODY: the request with CRs in two header values
    "$PY" - "$TG_PORT" "$KA" "$1" "$2" <<'PYEOF'
import socket, sys
port, key, path, body = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].encode()
c = socket.create_connection(("127.0.0.1", port))
c.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nX-Upstream-Authorization: Bearer abc\rInjected: 1\r\n"
           "OpenAI-Organization: org\rX-Smuggled: 2\r\nContent-Length: %d\r\n\r\n"
           % (path, key, len(body))).encode() + body)
c.settimeout(10)
data = b""
try:
    while b"\r\n\r\n" not in data:
        d = c.recv(4096)
        if not d:
            break
        data += d
except OSError:
    pass
print(data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "000")
PYEOF
}
for p in "/v1/chat/completions {\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
         "/v1/embeddings {\"model\":\"gpt-4o\",\"input\":\"x\"}"; do
    mock_reset
    code=$(raw_cr "${p%% *}" "${p#* }")
    mock_last "$O.last"
    got="$(json_get "$O.last" headers.authorization)|$(json_get "$O.last" headers.openai-organization)|$(json_get "$O.last" headers.injected)$(json_get "$O.last" headers.x-smuggled)"
    expect_eq "${p%% *}: a bare CR in a header value goes up as a space ($code)" \
        "Bearer abc Injected: 1|org X-Smuggled: 2|" "$got"
done

# ---- 10. secrets in upstream URLs are redacted ---------------------------------
code=$(tg_req "$O.leak" POST /leaky/v1/chat/completions -H "$A" -H "$JSON" \
    --data-binary '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
expect_eq "unreachable upstream: 502" 502 "$code"
if grep -Eq 'hunter2|sekrit|alice' "$O.leak"; then not_ok "the 502 names no userinfo or query" "$(cat "$O.leak")"; else ok "the 502 names no userinfo or query"; fi
expect_match "... but names the upstream, redacted" 'http://\*\*\*@127\.0\.0\.1:[0-9]+/v1\?\*\*\*' \
    "$(json_get "$O.leak" error.message)"
"$TG_BIN" check -c "$CONF" >"$O.check" 2>&1
if grep -Eq 'hunter2|sekrit' "$O.check" "$TG_LOG"; then
    not_ok "no log line and no 'toolgate check' line shows them" "$(grep -E 'hunter2|sekrit' "$O.check" "$TG_LOG" | head -5)"
else
    ok "no log line and no 'toolgate check' line shows them"
fi

# ---- 12. /metrics asks for a key ----------------------------------------------
expect_eq "/metrics without a key: 401" 401 "$(tg_req "$O.m" GET /metrics)"
expect_eq "/metrics with a client key: 200" 200 "$(tg_req "$O.m" GET /metrics -H "$B")"
expect_eq "/healthz and /readyz need none" "200 200" "$(tg_req "$O.m" GET /healthz) $(tg_req "$O.m" GET /readyz)"
hwm=$(vmhwm)
if [ "$hwm" -lt 80000 ]; then
    ok "toolgate's peak RSS through all of the above: $hwm KB (< 80 MB)"
else
    not_ok "toolgate's peak RSS through all of the above stays under 80 MB" "VmHWM $hwm KB"
fi
stop_toolgate

# ---- 7. budgets: bodies held at once, connections per address ------------------
PORT=$(free_port)
cat >"$CONF" <<EOF
[server]
listen = 127.0.0.1:$PORT
threads = 2
log_level = warn
max_body = 1M
max_body_memory = 3M
max_conns_per_ip = 8
client_keys = $KA

[route main]
models = gpt-*
upstream = http://127.0.0.1:$MOCK_PORT/v1
dialect = openai
EOF
if start_toolgate "$CONF"; then
    check "three 1 MB bodies held half-sent fill max_body_memory (3M): the fourth gets 503, and after they go a body is read again" \
        "$PY" - "$PORT" "$KA" <<'EOF'
import socket, sys, time
port, key = int(sys.argv[1]), sys.argv[2]
def head(n):
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (key.encode(), n))
held = []
for _ in range(3):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(head(1000000) + b" " * 500000)
    held.append(s)
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(head(1000000))
got = s.recv(4096)
assert got.startswith(b"HTTP/1.1 503"), got[:300]
assert b"max_body_memory" in got, got[:600]
for h in held:
    h.close()
time.sleep(0.5)
body = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(head(len(body)) + body)
got = s.recv(4096)
assert got.startswith(b"HTTP/1.1 200"), got[:300]
EOF
    check "max_conns_per_ip = 8: of 30 connections from one address at most 8 are served, and the address is served again once they close" \
        "$PY" - "$PORT" <<'EOF'
import socket, sys, time
port = int(sys.argv[1])
socks, served = [], 0
for _ in range(30):
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    socks.append(s)
for s in socks:
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        if s.recv(64).startswith(b"HTTP/1.1 200"):
            served += 1
    except OSError:
        pass
assert 1 <= served <= 8, served
for s in socks:
    s.close()
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port), timeout=2)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
assert s.recv(64).startswith(b"HTTP/1.1 200")
print("served", served)
EOF
    stop_toolgate
fi

finish
