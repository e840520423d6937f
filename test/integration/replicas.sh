#!/bin/sh
# replicas.sh -- two toolgate processes sharing one Responses item store in a
# real redis-server (Debian's, started here on a free loopback port in a temp
# dir, append-only file on so a restart keeps what it had):
#   - an item answered by replica A is found through replica B;
#   - owners are the same in both processes, and another owner's item is the
#     same 400 as an unknown one; one owner's flood trims only its own items
#     (responses_per_owner) and every item has a TTL (responses_ttl);
#   - Redis stopped in the middle: a reference is a quick 503 naming the
#     store (not "unknown item"), an answer still goes out, both counted in
#     /metrics; Redis started again: the same references are answered,
#     nothing it kept is lost.
# TAP, POSIX sh; run with TG_BIN / TG_MOCK set (test/run.sh sets them).
. "$(dirname "$0")/lib.sh"

if ! command -v redis-server >/dev/null 2>&1; then
    not_ok "redis-server is installed (.ci/deps.sh)"
    echo "1..$TAP_N"
    exit 1
fi

REDIS_PORT=$(free_port)
REDIS_DIR="$TG_TMP/redis"
REDIS_PID=
B_PID=
mkdir -p "$REDIS_DIR"

rcli() {
    redis-cli -p "$REDIS_PORT" -n 3 "$@"
}

start_redis() {
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$REDIS_DIR" --save '' \
        --appendonly yes --appendfsync always --daemonize no >>"$REDIS_DIR/log" 2>&1 &
    REDIS_PID=$!
    _i=0
    while [ $_i -lt 100 ]; do
        [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && return 0
        sleep 0.05
        _i=$((_i + 1))
    done
    not_ok "redis-server starts on port $REDIS_PORT" "$(tail -n 20 "$REDIS_DIR/log")"
    exit 1
}

stop_redis() {
    [ -n "$REDIS_PID" ] && stop_pid "$REDIS_PID" 10 2>/dev/null
    REDIS_PID=
}

cleanup() {
    _st=$?
    [ -n "$B_PID" ] && stop_pid "$B_PID" 10 2>/dev/null
    stop_redis
    (exit $_st)
    stop_all
}
trap cleanup EXIT

start_mock
start_redis
KA=key-alpha-0123456789
KB=key-bravo-0123456789
replica_conf() {  # replica_conf PORT
    conf_server "$1" "log_level = info
client_keys = $KA, $KB
responses_store = redis://127.0.0.1:$REDIS_PORT/3
responses_per_owner = 24K
responses_ttl = 1h"
    conf_route main 'gpt-*'
    printf '[route gem]\nprefix = /gem\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\ndiscovery = on\n\n' \
        "$MOCK_PORT"
}
PA=$(free_port)
replica_conf "$PA" >"$TG_TMP/a.conf"
PB=$(free_port)
replica_conf "$PB" >"$TG_TMP/b.conf"

# B first, then A: lib.sh's TG_* name A from here on.
start_toolgate "$TG_TMP/b.conf" || exit 1
B_PID=$TG_PID
B_URL=$TG_URL
B_LOG=$TG_LOG
TG_PID=
start_toolgate "$TG_TMP/a.conf" || exit 1
A_URL=$TG_URL

A="Authorization: Bearer $KA"
B="Authorization: Bearer $KB"
JSON='Content-Type: application/json'
O="$TG_TMP/o"
respond() {  # respond URL OUT AUTH BODY: prints the status
    curl -s -m 20 -o "$2" -w '%{http_code}' -H "$3" -H "$JSON" --data-binary "$4" "$1/v1/responses"
}
ref() {  # ref ID: a body that references item ID
    printf '{"model":"gpt-4o","input":[{"type":"item_reference","id":"%s"},{"role":"user","content":"and then?"}]}' "$1"
}

# ---- an item answered by A, referenced through B ---------------------------
code=$(respond "$A_URL" "$O.a1" "$A" '{"model":"gpt-4o","input":"remember the word kumquat"}')
item=$(json_get "$O.a1" output.0.id)
text=$(json_get "$O.a1" output.0.content.0.text)
expect_eq "replica A answers a Responses request with an item" "200 msg" \
    "$code $(printf '%s' "$item" | cut -c1-3)"
mock_reset
code=$(respond "$B_URL" "$O.b1" "$A" "$(ref "$item")")
mock_last "$O.last"
expect_eq "replica B answers a reference to A's item" 200 "$code"
expect_eq "what B sent upstream holds the item A answered with" "assistant $text" \
    "$(json_get "$O.last" body.messages.0.role) $(json_get "$O.last" body.messages.0.content)"

# ---- a previous_response_id answered by A, continued through B ---------------
resp=$(json_get "$O.a1" id)
mock_reset
code=$(respond "$B_URL" "$O.b6" "$A" \
    "$(printf '{"model":"gpt-4o","previous_response_id":"%s","input":"and then?"}' "$resp")")
mock_last "$O.last"
expect_eq "replica B continues A's response (previous_response_id): the chain goes upstream" \
    "200 user remember the word kumquat assistant user" \
    "$code $(json_get "$O.last" body.messages.0.role) $(json_get "$O.last" body.messages.0.content) $(json_get "$O.last" body.messages.1.role) $(json_get "$O.last" body.messages.2.role)"
code=$(respond "$B_URL" "$O.b7" "$B" \
    "$(printf '{"model":"gpt-4o","previous_response_id":"%s","input":"x"}' "$resp")")
expect_eq "another client cannot continue it: OpenAI's 400" "400 previous_response_not_found" \
    "$code $(json_get "$O.b7" error.code)"

# A chain whose earlier turn referenced an item: the item is read with the
# chain (a second round trip), and the turn after goes upstream whole.
code=$(respond "$A_URL" "$O.c1" "$A" \
    "$(printf '{"model":"gpt-4o","previous_response_id":"%s","input":[{"type":"item_reference","id":"%s"},{"role":"user","content":"again"}]}' "$resp" "$item")")
r2=$(json_get "$O.c1" id)
mock_reset
code2=$(respond "$B_URL" "$O.c2" "$A" \
    "$(printf '{"model":"gpt-4o","previous_response_id":"%s","input":"and now?"}' "$r2")")
mock_last "$O.last"
expect_eq "a chain whose turn referenced an item: the next turn sends it all upstream" \
    "200 200 6 $text" \
    "$code $code2 $(json_get "$O.last" body.messages | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))') $(json_get "$O.last" body.messages.2.content)"

# ---- Gemini's thought signatures: kept by A, put back by B (issue 31) -------
# Turn 1 through replica A: the mock's model signs its call. Turn 2 through
# replica B replays that call without the signature (a client that drops
# extra_content; the Messages and Responses bridges have no place for it):
# B reads what A kept in Redis before it prepares the request, and the
# mock, which refuses anything but its own signature, takes the turn.
SIGPY="$TG_ROOT/test/integration/signatures.py"
TOOLS=$("$PY" -c '
import json
print(json.dumps([{"type": "function", "function": {"name": n, "description": d,
    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}
    for n, d in [("get_weather", "the weather forecast for a city"), ("send_mail", "sends an email"),
                 ("read_file", "reads a file")]]))')
for api in chat messages responses; do
    path=/gem/v1/chat/completions
    [ $api = messages ] && path=/gem/v1/messages
    [ $api = responses ] && path=/gem/v1/responses
    for stream in false true; do
        T1=$("$PY" "$SIGPY" first $api $stream "$TOOLS")
        c1=$(curl -s -m 20 -o "$O.s1" -w '%{http_code}' -H "$A" -H "$JSON" -H 'X-Mock: discovery' \
            -H 'X-Mock-Discovery: direct' -H 'X-Mock-Signature: sig-Zm9v' --data-binary "$T1" "$A_URL$path")
        T2=$("$PY" "$SIGPY" replay $api $stream "$O.s1" "$T1")
        c2=$(curl -s -m 20 -o "$O.s2" -w '%{http_code}' -H "$A" -H "$JSON" -H 'X-Mock: discovery' \
            -H 'X-Mock-Discovery: direct' -H 'X-Mock-Signature: sig-Zm9v' --data-binary "$T2" "$B_URL$path")
        mock_last "$O.last"
        expect_eq "$api stream=$stream: answered by A, replayed without its signature through B, taken with it put back" \
            "200 200 1/1" "$c1 $c2 $("$PY" "$SIGPY" signed "$O.last")"
    done
done
expect_match "B says it restored them" 'restored from the store' "$(cat "$B_LOG")"
# the same replay by another client (key B): A's kept fields are not its own
T1=$("$PY" "$SIGPY" first chat false "$TOOLS")
curl -s -m 20 -o "$O.s1" -H "$A" -H "$JSON" -H 'X-Mock: discovery' -H 'X-Mock-Discovery: direct' \
    -H 'X-Mock-Signature: sig-Zm9v' --data-binary "$T1" "$A_URL/gem/v1/chat/completions" >/dev/null
T2=$("$PY" "$SIGPY" replay chat false "$O.s1" "$T1")
curl -s -m 20 -o "$O.s2" -H "$B" -H "$JSON" -H 'X-Mock: discovery' -H 'X-Mock-Discovery: direct' \
    -H 'X-Mock-Signature: sig-Zm9v' --data-binary "$T2" "$B_URL/gem/v1/chat/completions" >/dev/null
mock_last "$O.last"
expect_eq "another client's replay of that call gets no signature of A's" 0/1 \
    "$("$PY" "$SIGPY" signed "$O.last")"
nsig=$(rcli --scan --pattern 'tg:{*}:i:sig:*' | wc -l)
if [ "$nsig" -ge 1 ]; then ok "the kept signatures are items of their owner in Redis ($nsig keys)"
else not_ok "the kept signatures are items of their owner in Redis" "$nsig keys"; fi

# ---- owners: the same in both replicas, and each its own -------------------
code=$(respond "$B_URL" "$O.b2" "$B" "$(ref "$item")")
codeu=$(respond "$B_URL" "$O.b3" "$B" "$(ref msg_0_nosuchitemanywhere00000000)")
msg_b=$(json_get "$O.b2" error.message | sed "s/$item/ID/")
msg_u=$(json_get "$O.b3" error.message | sed "s/msg_0_nosuchitemanywhere00000000/ID/")
expect_eq "another client's reference to it: the same 400 as an unknown id" "400 400 $msg_u" \
    "$code $codeu $msg_b"
ttl=$(rcli --scan --pattern 'tg:{*}:i:*' | head -n 1 | xargs redis-cli -p "$REDIS_PORT" -n 3 pttl)
if [ "${ttl:-0}" -gt 3500000 ] && [ "$ttl" -le 3600000 ]; then
    ok "items expire after responses_ttl ($ttl ms left)"
else
    not_ok "items expire after responses_ttl" "pttl: '$ttl'"
fi

# client B floods through both replicas, ten times its 24K budget
code=$(respond "$A_URL" "$O.b4" "$B" '{"model":"gpt-4o","input":"my first"}')
b_first=$(json_get "$O.b4" output.0.id)
"$PY" - "$A_URL" "$B_URL" "$KB" <<'EOF'
import http.client, sys, urllib.parse
conns = [http.client.HTTPConnection(urllib.parse.urlparse(u).hostname,
                                    urllib.parse.urlparse(u).port, timeout=20)
         for u in sys.argv[1:3]]
body = '{"model":"gpt-4o","input":"%s"}' % ("fill " * 20)
for i in range(160):
    c = conns[i % 2]
    c.request("POST", "/v1/responses", body, {"Authorization": "Bearer " + sys.argv[3],
                                               "Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
EOF
code=$(respond "$B_URL" "$O.a2" "$A" "$(ref "$item")")
codeb=$(respond "$A_URL" "$O.b5" "$B" "$(ref "$b_first")")
expect_eq "after B's flood: A's item is still there, B's own first item is gone" "200 400" \
    "$code $codeb"
# (the scan must find the owners' hashes: none found would pass as none over)
totals=$(for k in $(rcli --scan --pattern 'tg:{*}:s'); do rcli hget "$k" '#'; done)
over=$(printf '%s\n' "$totals" | awk '$1 > 24 * 1024 { print }')
expect_eq "no owner holds more than responses_per_owner in Redis (of 2 owners)" "2 " \
    "$(printf '%s\n' "$totals" | grep -c '^[0-9]') $over"
# Every key toolgate writes expires: items (the kept signatures among
# them, tg:{O}:i:sig:ID), and each owner's list and hash (an owner idle
# for responses_ttl leaves nothing).
kinds=$(rcli --scan --pattern 'tg:*' | sed 's/^tg:{[0-9a-f]*}:\([ios]\).*/\1/' | sort -u | tr -d '\n')
noexp=$(for k in $(rcli --scan --pattern 'tg:*'); do
    t=$(rcli pttl "$k")
    [ "$t" -gt 0 ] && [ "$t" -le 3600000 ] || echo "$k $t"
done)
expect_eq "every key toolgate wrote (items, owners' lists and hashes) has a TTL of at most responses_ttl" \
    "ios " "$kinds $noexp"
nsig=$(rcli --scan --pattern 'tg:{*}:i:sig:*' | wc -l)
expect_eq "... the kept signatures among them (the scan found them)" 1 "$([ "$nsig" -ge 1 ] && echo 1)"

# ---- Redis stops in the middle, then comes back -----------------------------
stop_redis
t0=$(now_ms)
code=$(respond "$B_URL" "$O.d1" "$A" "$(ref "$item")")
t1=$(now_ms)
expect_eq "Redis down: a reference is a 503" 503 "$code"
expect_match "... naming the store, not an unknown item" \
    "store_unavailable.*responses_store, redis 127.0.0.1:$REDIS_PORT/3" \
    "$(json_get "$O.d1" error.code) $(json_get "$O.d1" error.message)"
if [ $((t1 - t0)) -lt 3000 ]; then ok "... answered without waiting on Redis ($((t1 - t0)) ms)"
else not_ok "... answered without waiting on Redis" "$((t1 - t0)) ms"; fi
code=$(respond "$A_URL" "$O.d2" "$A" '{"model":"gpt-4o","input":"while it is away"}')
expect_eq "Redis down: an answer still goes out" "200 completed" "$code $(json_get "$O.d2" status)"
m=$(curl -s -m 5 -H "$A" "$A_URL/metrics")
expect_match "the put that failed is counted" 'toolgate_store_errors_total\{op="put"\} [1-9]' "$m"
m=$(curl -s -m 5 -H "$A" "$B_URL/metrics")
expect_match "the get that failed is counted" 'toolgate_store_errors_total\{op="get"\} [1-9]' "$m"
if grep -q "responses_store redis 127.0.0.1:$REDIS_PORT/3: " "$B_LOG"; then ok "the failure is logged"
else not_ok "the failure is logged" "$(tail -n 5 "$B_LOG")"; fi

start_redis
# A replica's worker tries again after its backoff (at most 1 s, less once
# another worker of its process has connected again): a reference made
# before then may still be a 503, never a 400. Each replica is polled for
# up to 4 s, since which worker takes a request is the kernel's choice.
# until_found URL ID: the statuses of references to ID through URL, until a 200.
until_found() {
    _got=
    _i=0
    while [ $_i -lt 40 ]; do
        _c=$(respond "$1" "$O.poll" "$A" "$(ref "$2")")
        _got="$_got $_c"
        [ "$_c" = 200 ] && break
        sleep 0.1
        _i=$((_i + 1))
    done
    echo "$_got"
}
expect_match "Redis back: B answers A's item again (nothing lost)" '^( 503)* 200$' "$(until_found "$B_URL" "$item")"
expect_match "... and so does A" '^( 503)* 200$' "$(until_found "$A_URL" "$item")"
# A new item made through A once its store answers again is found through B.
_i=0
while [ $_i -lt 40 ]; do
    code=$(respond "$A_URL" "$O.r3" "$A" '{"model":"gpt-4o","input":"after the return"}')
    new=$(json_get "$O.r3" output.0.id)
    code=$(respond "$B_URL" "$O.r4" "$A" "$(ref "$new")")
    [ "$code" = 200 ] && break
    sleep 0.1
    _i=$((_i + 1))
done
expect_eq "a new item is shared again" 200 "$code"

# ---- deploy/kubernetes-replicas.yaml --------------------------------------
# The manifests parse, the Deployment runs several replicas with readiness
# and liveness probes, a Redis stands beside it, and the conf in the
# ConfigMap is one toolgate accepts, naming that Redis.
"$PY" - "$TG_ROOT/deploy" "$TG_BIN" >"$O.k8s" 2>&1 <<'EOF'
import os, subprocess, sys, tempfile, yaml
deploy, tg = sys.argv[1], sys.argv[2]
list(yaml.safe_load_all(open(os.path.join(deploy, "kubernetes-sidecar.yaml"))))
docs = {(d["kind"], d["metadata"]["name"]): d
        for d in yaml.safe_load_all(open(os.path.join(deploy, "kubernetes-replicas.yaml")))}
dep = docs[("Deployment", "toolgate")]["spec"]
assert dep["replicas"] >= 2, dep["replicas"]
c = dep["template"]["spec"]["containers"][0]
assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
assert ("Service", "toolgate") in docs and ("Service", "redis") in docs
assert ("Deployment", "redis") in docs or ("StatefulSet", "redis") in docs
conf = docs[("ConfigMap", "toolgate-replicas-conf")]["data"]["toolgate.conf"]
assert "responses_store = redis://redis:6379/0" in conf
with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
    f.write(conf)
    f.flush()
    env = dict(os.environ, TOOLGATE_CLIENT_KEYS="k", GEMINI_API_KEY="g", OPENAI_API_KEY="o")
    subprocess.run([tg, "check", "-c", f.name], env=env, check=True)
EOF
if [ $? = 0 ]; then ok "deploy/kubernetes-replicas.yaml: replicas, probes, a Redis, a conf toolgate accepts"
else not_ok "deploy/kubernetes-replicas.yaml: replicas, probes, a Redis, a conf toolgate accepts" "$(cat "$O.k8s")"; fi

# ---- owners by provider key alone (no client_keys), in Redis -------------------
PC=$(free_port)
{
    conf_server "$PC" "responses_store = redis://127.0.0.1:$REDIS_PORT/3
responses_ttl = 1h"
    conf_route main 'gpt-*'
} >"$TG_TMP/c.conf"
stop_toolgate
start_toolgate "$TG_TMP/c.conf" || exit 1
check "provider keys alone keep Responses items and previous_response_id chains apart (Redis)" \
    "$PY" "$TG_ROOT/test/integration/owners.py" "$TG_URL"
check "GET/DELETE /v1/responses/{id}, input_items and cancel answered from the store (Redis)" \
    "$PY" "$TG_ROOT/test/integration/stored.py" "$TG_URL"

stop_pid "$B_PID" 20
B_PID=
sanitizer_clean "toolgate (replica B)" "$B_LOG"
stop_toolgate
finish
