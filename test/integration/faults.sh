#!/bin/sh
# faults.sh -- upstream faults and hostile clients: garbage JSON and garbage
# SSE from upstream, a 10 MB answer, a client that reads slowly while others
# are served, oversized headers, many clients that vanish mid-stream; after
# each, toolgate still answers and its log stays sanitizer-clean.
. "$(dirname "$0")/lib.sh"

start_mock
port=$(free_port)
conf="$TG_TMP/faults.conf"
{
    conf_server "$port" "max_header = 8K"
    conf_route main 'gpt-*' 'idle_timeout = 3s'
} >"$conf"
start_toolgate "$conf" || exit 1
MSG='"messages":[{"role":"user","content":"hi"}]'
alive() {  # alive NAME: toolgate still answers a plain request
    code=$(chat "$TG_TMP/alive" "{\"model\":\"gpt-4o\",$MSG}")
    expect_eq "$1: toolgate still serves" 200 "$code"
}

# ---- upstream closes its connections --------------------------------------------
# Half the answers say "Connection: close": the sockets toolgate keeps
# registered between transfers are closed and their numbers reused by new
# connections, which must still be watched (a missed one would hang here).
bad=0
i=0
while [ $i -lt 40 ]; do
    if [ $((i % 2)) -eq 0 ]; then
        code=$(chat "$TG_TMP/kc" "{\"model\":\"gpt-4o\",$MSG}" -H 'X-Mock-Close: 1' -m 3)
    else
        code=$(chat "$TG_TMP/kc" "{\"model\":\"gpt-4o\",$MSG}" -m 3)
    fi
    [ "$code" = 200 ] || bad=$((bad + 1))
    i=$((i + 1))
done
expect_eq "40 requests, upstream closing every other connection: all 200" 0 "$bad"

# ---- provider error bodies: every client must be able to read them -----------
# (their shapes from docs/dialects.md section 4 and the providers' docs)
fx() {  # fx NAME STATUS CTYPE BODY [stream]: toolgate's answer to that upstream answer
    printf '%s' "$4" >"$TG_TMP/fx-$1.json"
    chat "$TG_TMP/fx-$1.out" "{\"model\":\"gpt-4o\",${5:+\"stream\":true,}$MSG}" -H 'X-Mock: fixture' \
        -H "X-Mock-Fixture: $TG_TMP/fx-$1.json" -H "X-Mock-Status: $2" -H "X-Mock-Content-Type: $3"
}
st=$(fx empty200 200 application/json '[]')
check "a 200 whose body is not an object: 502, OpenAI-shaped, toolgate alive" "$PY" -c '
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert sys.argv[2] == "502" and "without a chat completion" in e["message"], (sys.argv[2], e)' \
    "$TG_TMP/fx-empty200.out" "$st"
alive "after a 200 with []"
st=$(fx gemini429 429 application/json '[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]' s)
check "Gemini's [{error}] 429 (stream request): message, type and code in OpenAI's shape, provider body kept" "$PY" -c '
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert sys.argv[2] == "429", sys.argv[2]
assert e["message"].startswith("Resource has been exhausted") and e["type"] == "RESOURCE_EXHAUSTED" and e["code"] == 429, e
assert e["provider_error"][0]["error"]["status"] == "RESOURCE_EXHAUSTED", e' "$TG_TMP/fx-gemini429.out" "$st"
st=$(fx mistral 400 application/json '{"object":"error","message":"Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9.","type":"invalid_function_call","param":null,"code":"3280"}')
check "Mistral's top-level error object: message, type, code kept" "$PY" -c '
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert sys.argv[2] == "400" and e["message"].startswith("Tool call id was") and e["type"] == "invalid_function_call" and e["code"] == "3280", e' \
    "$TG_TMP/fx-mistral.out" "$st"
st=$(fx detail 422 application/json '{"detail":[{"type":"extra_forbidden","loc":["body","messages",6,"assistant","tool_calls",0,"name"],"msg":"Extra inputs are not permitted","input":null}]}')
check "a 422 FastAPI detail list becomes the message" "$PY" -c '
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert sys.argv[2] == "422" and "extra_forbidden" in e["message"] and e["type"] == "invalid_request_error", e' \
    "$TG_TMP/fx-detail.out" "$st"
st=$(fx html 502 text/html '<html><body>502 Bad Gateway</body></html>')
check "an HTML 502 from a load balancer: JSON error carrying its text" "$PY" -c '
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert sys.argv[2] == "502" and "502 Bad Gateway" in e["message"] and e["type"] == "api_error", e' \
    "$TG_TMP/fx-html.out" "$st"
expect_match "the rewritten error says it is JSON" 'application/json' "$(header_value "$TG_TMP/fx-html.out.h" Content-Type)"
OAI='{"error":{"message":"Invalid value","type":"invalid_request_error","param":"messages","code":null}}'
st=$(fx openai 400 application/json "$OAI")
expect_eq "an OpenAI-shaped error is relayed byte for byte" "400 $OAI" "$st $(cat "$TG_TMP/fx-openai.out")"

# ---- events toolgate cannot parse as they came ----------------------------------
# A Latin-1 byte in a call's arguments (U+FFFD in its place, the call still
# repaired and finished), and a stream cut in the middle of an event (not
# relayed half-parsed; the truncation error quotes it).
printf 'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_1","function":{"name":"get_weather","arguments":"{\\"location\\":\\"Z\374rich\\"}"}}]},"finish_reason":null}]}\n\ndata: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n' >"$TG_TMP/latin1.sse"
TOOLS='"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]'
curl -s -N -m 10 -H 'Content-Type: application/json' -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/latin1.sse" \
    --data-binary "{\"model\":\"gpt-4o\",\"stream\":true,$MSG,$TOOLS}" "$TG_URL/v1/chat/completions" >"$TG_TMP/latin1.out"
check "a Latin-1 byte in arguments: the call keeps its index, U+FFFD in place, finish tool_calls (R10)" "$PY" -c '
import json, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1], encoding="utf-8") if l.startswith("data: {")]
calls = [tc for e in ev for c in e.get("choices", []) for tc in c["delta"].get("tool_calls", [])]
fins = [c["finish_reason"] for e in ev for c in e.get("choices", []) if c.get("finish_reason")]
assert len(calls) == 1 and calls[0]["index"] == 0 and json.loads(calls[0]["function"]["arguments"]) == {"location": "Z\ufffdrich"}, calls
assert fins == ["tool_calls"], fins' "$TG_TMP/latin1.out"
printf '{"id":"r1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","function":{"name":"get_weather","arguments":"{\\"location\\":\\"Z\374rich\\"}"}}]},"finish_reason":"stop"}]}' >"$TG_TMP/latin1.json"
st=$(chat "$TG_TMP/latin1w.out" "{\"model\":\"gpt-4o\",$MSG,$TOOLS}" -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/latin1.json")
check "the same whole: 200, repaired (type, finish tool_calls), not a 502" "$PY" -c '
import json, sys
assert sys.argv[2] == "200", sys.argv[2]
c = json.load(open(sys.argv[1], encoding="utf-8"))["choices"][0]
assert c["finish_reason"] == "tool_calls" and c["message"]["tool_calls"][0]["type"] == "function", c' "$TG_TMP/latin1w.out" "$st"
# A plain answer (no tool calls: the path where the whole answer is relayed
# without being parsed into a tree) with no finish_reason, or with a word
# that is not OpenAI's: the client gets "stop" (R10), not what came.
for fin in none end_turn STOP; do
    if [ $fin = none ]; then f=''; else f=",\"finish_reason\":\"$fin\""; fi
    printf '{"id":"r1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."}%s}]}' "$f" >"$TG_TMP/fin-$fin.json"
    st=$(chat "$TG_TMP/fin-$fin.out" "{\"model\":\"gpt-4o\",$MSG}" -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/fin-$fin.json")
    check "a plain whole answer, finish_reason $fin: 200, the text kept, finish stop" "$PY" -c '
import json, sys
assert sys.argv[2] == "200", sys.argv[2]
c = json.load(open(sys.argv[1]))["choices"][0]
assert c["finish_reason"] == "stop" and c["message"]["content"] == "Hello.", c' "$TG_TMP/fin-$fin.out" "$st"
done
printf 'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\ndata: {"id":"c1","choices":[{"index":0,"delta":{"content":"the' >"$TG_TMP/cut.sse"
curl -s -N -m 10 -H 'Content-Type: application/json' -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/cut.sse" \
    --data-binary "{\"model\":\"gpt-4o\",\"stream\":true,$MSG}" "$TG_URL/v1/chat/completions" >"$TG_TMP/cut.out"
check "a stream cut mid-event: no half event relayed, one error quoting it, then [DONE]" "$PY" -c '
import json, sys
data = [l[6:].strip() for l in open(sys.argv[1]) if l.startswith("data: ")]
assert data[-1] == "[DONE]", data
ev = [json.loads(d) for d in data[:-1]]
errs = [e for e in ev if "error" in e]
assert len(errs) == 1 and errs[0] is ev[-1] and "not JSON" in errs[0]["error"]["message"], ev' "$TG_TMP/cut.out"

# ---- garbage from upstream ---------------------------------------------------
code=$(chat "$TG_TMP/g" "{\"model\":\"gpt-4o\",$MSG}" -H 'X-Mock: garbage')
expect_eq "garbage JSON from upstream: 502" 502 "$code"
expect_match "garbage JSON: OpenAI-shaped error naming the upstream" '"code":"bad_upstream_response"' "$(cat "$TG_TMP/g")"
curl -s -N -m 10 -H 'Content-Type: application/json' -H 'X-Mock: garbage' \
    --data-binary "{\"model\":\"gpt-4o\",\"stream\":true,$MSG}" "$TG_URL/v1/chat/completions" >"$TG_TMP/gs"
expect_eq "garbage SSE from upstream: the stream still ends with [DONE]" "data: [DONE]" \
    "$(grep '^data: ' "$TG_TMP/gs" | tail -n 1)"
alive "after garbage"

# ---- a 10 MB answer ------------------------------------------------------------
code=$(chat "$TG_TMP/big" "{\"model\":\"gpt-4o\",$MSG}" -H 'X-Mock: big')
size=$(json_get "$TG_TMP/big" choices.0.message.content | wc -c)
if [ "$code" = 200 ] && [ "$size" -gt 10000000 ]; then
    ok "10 MB upstream answer delivered whole ($size bytes of content)"
else
    not_ok "10 MB upstream answer delivered whole" "status $code, $size bytes"
fi

# ---- a client that reads slowly, while others are served ------------------------
# The reader takes 4 KB of its stream, then reads nothing until the fast
# request has been answered (a file says so), then the rest: an order,
# not a time, so a loaded machine passes.
"$PY" - "$TG_PORT" "$TG_TMP/slow" "$TG_TMP/fast.done" "{\"model\":\"gpt-4o\",\"stream\":true,$MSG}" <<'EOF' &
import os, socket, sys, time
port, out, flag, body = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].encode()
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"X-Mock-Chunks: 3000\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
got = s.recv(4096)
limit = time.monotonic() + 60
while not os.path.exists(flag) and time.monotonic() < limit:
    time.sleep(0.05)
s.settimeout(60)
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
open(out, "wb").write(got)
EOF
slow_pid=$!
sleep 1
t0=$(now_ms)
code=$(chat "$TG_TMP/fast" "{\"model\":\"gpt-4o\",$MSG}")
dt=$(($(now_ms) - t0))
touch "$TG_TMP/fast.done"
expect_eq "a slow reader does not hold up other clients (${dt} ms)" 200 "$code"
wait "$slow_pid"
events=$(grep -c '^data: ' "$TG_TMP/slow")
expect_eq "the slow reader gets the whole stream ($events events)" 1 "$(grep -c '^data: \[DONE\]' "$TG_TMP/slow")"

# ---- oversized request headers ----------------------------------------------------
big_header=$("$PY" -c 'print("x" * 20000)')
code=$(chat "$TG_TMP/h" "{\"model\":\"gpt-4o\",$MSG}" -H "X-Big: $big_header")
case "$code" in 431) ok "headers far over max_header: 431" ;; *) not_ok "headers far over max_header: 431" "got $code" ;; esac
# Just over max_header (8K here) toolgate itself answers, OpenAI-shaped;
# far over it (past the connection's pool) libmicrohttpd answers 431 first.
big_header=$("$PY" -c 'print("x" * 9000)')
code=$(chat "$TG_TMP/h" "{\"model\":\"gpt-4o\",$MSG}" -H "X-Big: $big_header")
case "$code" in 431) ok "headers just over max_header: 431" ;; *) not_ok "headers just over max_header: 431" "got $code" ;; esac
expect_match "that 431 is OpenAI-shaped" '"code":"request_header_fields_too_large"' "$(cat "$TG_TMP/h")"
alive "after oversized headers"

# ---- fifty clients that vanish mid-stream ----------------------------------------
i=0
pids=
while [ $i -lt 50 ]; do
    curl -s -N -m 0.3 -H 'Content-Type: application/json' -H 'X-Mock-Chunks: 20' -H 'X-Mock-Delay-Ms: 100' \
        --data-binary "{\"model\":\"gpt-4o\",\"stream\":true,$MSG}" "$TG_URL/v1/chat/completions" >/dev/null 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
wait $pids  # the curls only: a bare wait would wait for the mock too
sleep 0.5
tg_req "$TG_TMP/m" GET /metrics >/dev/null
inflight=$(sed -n 's/^toolgate_inflight \([0-9]*\)$/\1/p' "$TG_TMP/m")
expect_eq "vanished clients leave nothing in flight" 1 "$inflight"
alive "after vanished clients"

stop_toolgate
expect_eq "exit 0 on SIGTERM after the faults" 0 "$TG_STATUS"
finish
