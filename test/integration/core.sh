#!/bin/sh
# core.sh -- toolgate's proxy behaviour end to end, against the mock upstream.
#
# One toolgate serves most checks; its routes point at the mock under
# different path prefixes (/first, /second, /pre, /main), so the mock's
# GET /_last tells which route a request took and what exactly was sent
# upstream. A second instance checks client_keys; the first is stopped with
# SIGTERM while a stream is in flight. Timing checks use generous margins
# (ASan build, 2 cores) but still fail when a response is buffered whole.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock -v

PORT=$(free_port)
CLOSED=$(free_port) # nothing listens there: the "dead" route's upstream
CONF="$TG_TMP/core.conf"
export TG_IT_ROUTE_KEY="sk-route-key"
{
    conf_server "$PORT" "max_body = 64K"
    printf '[route first]\nmodels = glob-a-*\nupstream = http://127.0.0.1:%s/first/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route second]\nmodels = glob-*\nupstream = http://127.0.0.1:%s/second/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route pre]\nmodels = never-*\nprefix = /pre\nupstream = http://127.0.0.1:%s/pre/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route dead]\nmodels = dead-*\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nconnect_timeout = 2s\n\n' "$CLOSED"
    printf '[route slow]\nmodels = slow-*\nupstream = http://127.0.0.1:%s/slow/v1\ndialect = openai\nttfb_timeout = 1s\nidle_timeout = 1s\n\n' "$MOCK_PORT"
    printf '[route prov]\nmodels = prov/*\nstrip_model_prefix = other/, prov/\nupstream = http://127.0.0.1:%s/prov/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route alias]\nmodels = fast\nupstream_model = real-model-1\nupstream = http://127.0.0.1:%s/alias/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route main]\nmodels = mock-*, gpt-*\nupstream = http://127.0.0.1:%s/main/v1\napi_key = ${TG_IT_ROUTE_KEY}\ndialect = openai\n' "$MOCK_PORT"
} >"$CONF"
B="$TG_TMP/body"

# ---- command line -----------------------------------------------------------

out=$("$TG_BIN" version 2>&1)
rc=$?
if [ $rc = 0 ] && printf '%s' "$out" | grep -Eq '[0-9]+\.[0-9]+'; then ok "toolgate version prints a version"; else not_ok "toolgate version prints a version" "rc=$rc out=$out"; fi

out=$("$TG_BIN" check -c "$CONF" 2>&1)
rc=$?
expect_eq "toolgate check: good conf exits 0" 0 "$rc"
expect_match "toolgate check lists every route" 'first.*second.*pre.*dead.*slow.*prov.*alias.*main' "$(printf '%s' "$out" | tr '\n' ' ')"

# The shipped conf, with none of its ${VAR}s set (empty expansions).
out=$(env -i PATH="$PATH" ASAN_OPTIONS="$ASAN_OPTIONS" UBSAN_OPTIONS="$UBSAN_OPTIONS" "$TG_BIN" check -c "$TG_ROOT/conf/toolgate.conf" 2>&1)
rc=$?
if [ $rc = 0 ] && ! printf '%s' "$out" | grep -q 'Sanitizer'; then ok "toolgate check: conf/toolgate.conf is valid with no env set"; else not_ok "toolgate check: conf/toolgate.conf is valid with no env set" "rc=$rc
$(printf '%s' "$out" | head -n 12)"; fi

BAD="$TG_TMP/bad.conf"
printf '[server]\nlisten = 127.0.0.1:%s\nno_such_key = 1\n' "$PORT" >"$BAD"
out=$("$TG_BIN" check -c "$BAD" 2>&1)
rc=$?
expect_eq "toolgate check: unknown key exits 1" 1 "$rc"
expect_match "toolgate check: error is FILE:LINE: message" "^$BAD:3: .+" "$out"

# ---- serving ----------------------------------------------------------------

start_toolgate "$CONF" || finish

expect_eq "GET /healthz is 200" 200 "$(tg_req "$B" GET /healthz)"
expect_eq "GET /readyz is 200" 200 "$(tg_req "$B" GET /readyz)"

# Non-streaming round trip.
st=$(chat "$B" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
expect_eq "non-stream: status 200" 200 "$st"
expect_eq "non-stream: upstream content relayed" "hello from mock" "$(json_get "$B" choices.0.message.content)"
expect_eq "non-stream: model echoed" "gpt-4o" "$(json_get "$B" model)"

# Tool call, non-stream: the agent gets the mock's call intact.
st=$(chat "$B" '{"model":"mock-tools","messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}')
expect_eq "tools: tool call name relayed" "get_weather" "$(json_get "$B" choices.0.message.tool_calls.0.function.name)"
expect_eq "tools: finish_reason tool_calls" "tool_calls" "$(json_get "$B" choices.0.finish_reason)"

# Structured output (docs/dialects.md section 2): a strict response_format with an
# optional property goes up with it required and nullable, and the null the
# model must then write for it does not reach the agent, whole or streamed.
RF='"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}}}'
st=$(chat "$B" "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"who?\"}],$RF}" -H 'X-Mock: structured')
mock_last "$TG_TMP/last"
expect_eq "structured output: upstream schema has every property required" '["name","age"]' \
    "$(json_get "$TG_TMP/last" body.response_format.json_schema.schema.required)"
expect_eq "structured output: the agent gets its own schema's JSON" '{"name":"x"}' \
    "$(json_get "$B" choices.0.message.content)"
stream_times "$TG_TMP/sstream" "$TG_URL/v1/chat/completions" "{\"model\":\"gpt-4o\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"who?\"}],$RF}" \
    -H 'X-Mock: structured' 2>/dev/null
so=$("$PY" -c '
import json, sys
text = ""
for line in open(sys.argv[1]):
    line = line.split(" ", 1)[1] if " " in line else line
    if line.startswith("data: {"):
        for ch in json.loads(line[6:]).get("choices", []):
            text += ch.get("delta", {}).get("content") or ""
print(text)' "$TG_TMP/sstream" 2>&1)
expect_eq "structured output, streamed: the agent gets its own schema's JSON" '{"name":"x"}' "$so"

# A 10 MB answer is relayed whole.
st=$(chat "$B" '{"model":"gpt-4o","messages":[{"role":"user","content":"long"}]}' -H 'X-Mock: big')
expect_eq "10 MB response: status 200" 200 "$st"
expect_eq "10 MB response: content intact" 10485760 "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["choices"][0]["message"]["content"]))' "$B" 2>&1)"

# Streaming: 3 chunks 200 ms apart must arrive as they are produced. The
# reader stamps each "data:" line with milliseconds since the request began.
CHAT_URL="$TG_URL/v1/chat/completions"
stream_times "$TG_TMP/stream" "$CHAT_URL" '{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}' \
    -H 'X-Mock-Chunks: 3' -H 'X-Mock-Delay-Ms: 200'
n=$(grep -c . "$TG_TMP/stream")
first=$(head -n 1 "$TG_TMP/stream" | cut -d' ' -f1)
last=$(tail -n 1 "$TG_TMP/stream" | cut -d' ' -f1)
text=$(sed 's/^[0-9]* data: //' "$TG_TMP/stream" | "$PY" -c '
import json, sys
out = ""
for l in sys.stdin:
    l = l.strip()
    if l and l != "[DONE]":
        for c in json.loads(l).get("choices", []):
            out += (c.get("delta") or {}).get("content") or ""
print(out)')
expect_eq "stream: all content deltas relayed in order" "tok0 tok1 tok2 " "$text"
expect_match "stream: ends with data: [DONE]" 'data: \[DONE\]$' "$(tail -n 1 "$TG_TMP/stream")"
# Pieces leave the mock at 0, 200, ... 1000 ms: the first must not wait for the rest.
if [ "$n" -ge 6 ] && [ "${first:-99999}" -le 400 ] && [ "${last:-0}" -ge 800 ] && [ $((last - ${first:-99999})) -ge 600 ]; then
    ok "stream: chunks arrive as produced (first at ${first} ms, last at ${last} ms)"
else
    not_ok "stream: chunks arrive as produced" "events=$n first=${first}ms last=${last}ms
$(cut -c1-100 "$TG_TMP/stream")"
fi

# Streaming tool call: one complete call, arguments parse.
stream_times "$TG_TMP/tstream" "$CHAT_URL" '{"model":"mock-tools","stream":true,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{}}}}]}'
res=$(sed 's/^[0-9]* data: //' "$TG_TMP/tstream" | "$PY" -c '
import json, sys
name, args, fin = "", "", None
for l in sys.stdin:
    l = l.strip()
    if not l or l == "[DONE]":
        continue
    for c in json.loads(l).get("choices", []):
        for tc in (c.get("delta") or {}).get("tool_calls") or []:
            f = tc.get("function") or {}
            name += f.get("name") or ""
            args += f.get("arguments") or ""
        fin = c.get("finish_reason") or fin
json.loads(args)
print(name, fin)' 2>&1)
expect_eq "stream tools: call name, parsable args, finish_reason" "lookup tool_calls" "$res"

# Routing: prefix beats model globs; globs are tried in file order.
mock_reset
chat "$B" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "routing: model glob picks route main" "/main/v1/chat/completions" "$(json_get "$TG_TMP/last" path)"
tg_req "$B" POST /pre/v1/chat/completions -H 'Content-Type: application/json' \
    --data-binary '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "routing: prefix /pre wins over the model" "/pre/v1/chat/completions" "$(json_get "$TG_TMP/last" path)"
chat "$B" '{"model":"glob-a-1","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "routing: first matching route in file order" "/first/v1/chat/completions" "$(json_get "$TG_TMP/last" path)"
chat "$B" '{"model":"glob-b-1","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "routing: later glob when the first does not match" "/second/v1/chat/completions" "$(json_get "$TG_TMP/last" path)"

# The route stage names the model as the provider knows it: a routing
# prefix is cut, an alias becomes the provider's model; the rest of the
# body is untouched.
chat "$B" '{"model":"prov/llama-3.3-70b","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "routing: strip_model_prefix cuts the matching prefix" "/prov/v1/chat/completions llama-3.3-70b" \
    "$(json_get "$TG_TMP/last" path) $(json_get "$TG_TMP/last" body.model)"
chat "$B" '{"model":"fast","messages":[{"role":"user","content":"hi"}],"temperature":0.5}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "routing: upstream_model replaces an alias" "/alias/v1/chat/completions real-model-1 0.5" \
    "$(json_get "$TG_TMP/last" path) $(json_get "$TG_TMP/last" body.model) $(json_get "$TG_TMP/last" body.temperature)"
chat "$B" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "routing: a route without either keeps the model" "gpt-4o" "$(json_get "$TG_TMP/last" body.model)"

# RFC 8259 allows \u0000 in a string (a tool that read a binary file): the
# request goes upstream with it, not refused as "not valid JSON".
mock_reset
st=$(chat "$B" '{"model":"gpt-4o","messages":[{"role":"user","content":"bytes: a\u0000b"}]}')
mock_last "$TG_TMP/last"
check "\\u0000 in content: 200 and sent upstream as it came" "$PY" -c '
import json, sys
assert sys.argv[2] == "200", sys.argv[2]
up = json.loads(json.load(open(sys.argv[1]))["body"])
assert up["messages"][0]["content"] == "bytes: a\0b", up' "$TG_TMP/last" "$st"

# Numbers pass as they came: a real keeps its shortest text (0.1, not
# jansson's 0.10000000000000001) and an integer past int64 (a u64 maximum in
# a generated schema) is valid JSON, not a 400.
mock_reset
st=$(chat "$B" '{"model":"gpt-4o","temperature":0.1,"top_p":0.95,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":18446744073709551615},"x":{"type":"number","multipleOf":0.01}}}}}]}')
mock_last "$TG_TMP/last"
check "numbers: 0.1 stays 0.1 upstream, a u64 maximum is accepted" "$PY" -c '
import json, sys
assert sys.argv[2] == "200", sys.argv[2]
raw = json.load(open(sys.argv[1]))["body"]
assert "\"temperature\":0.1," in raw and "\"top_p\":0.95," in raw and "\"multipleOf\":0.01" in raw, raw
n = json.loads(raw)["tools"][0]["function"]["parameters"]["properties"]["n"]
assert float(n["maximum"]) == 18446744073709551615.0, n' "$TG_TMP/last" "$st"

# A compressed chat body is decoded before it is read and rewritten
# (core/decode.c; request_coding.sh has the rest); one in a coding toolgate
# does not know is a 415 naming it, not "not valid JSON near \u001F".
printf '%s' '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' | gzip -c >"$TG_TMP/body.gz"
st=$(tg_req "$B" POST /v1/chat/completions -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' \
    --data-binary @"$TG_TMP/body.gz")
expect_eq "gzip chat body: decoded and answered" "200 chat.completion" "$st $(json_get "$B" object)"
st=$(tg_req "$B" POST /v1/chat/completions -H 'Content-Type: application/json' -H 'Content-Encoding: compress' \
    --data-binary @"$TG_TMP/body.gz")
expect_eq "a body in an unknown coding: 415 unsupported_content_encoding naming it" \
    "415 unsupported_content_encoding yes" \
    "$st $(json_get "$B" error.code) $(grep -q "Content-Encoding 'compress'" "$B" && echo yes)"

# A tool list that failed its check fails again when resent: only lists
# that passed are remembered as checked.
BADT='{"model":"gpt-4o","messages":[],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function"}]}'
expect_eq "a bad tool list is refused every time it is sent (400 tools[1].function twice)" \
    "400 tools[1].function 400 tools[1].function" \
    "$(chat "$B" "$BADT") $(json_get "$B" error.param) $(chat "$B" "$BADT") $(json_get "$B" error.param)"

# toolgate's own errors, OpenAI-shaped, and nothing sent upstream.
mock_reset
st=$(chat "$B" '{"model":"no-such-model-xyz","messages":[]}')
expect_eq "no route: 404" 404 "$st"
expect_match "no route: message names the model" 'no-such-model-xyz' "$(json_get "$B" error.message)"
check "no route: error has message/type/param/code" "$PY" -c '
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert set(["message", "type", "param", "code"]) <= set(e), e' "$B"
st=$(chat "$B" '{"model": "gpt-4o", "messages": [')
expect_eq "bad JSON: 400" 400 "$st"
check "bad JSON: OpenAI-shaped error" json_get "$B" error.message
"$PY" -c 'import json; print(json.dumps({"model":"gpt-4o","messages":[{"role":"user","content":"x"*100000}]}))' >"$TG_TMP/big.json"
st=$(tg_req "$B" POST /v1/chat/completions -H 'Content-Type: application/json' --data-binary @"$TG_TMP/big.json")
expect_eq "body over max_body: 413" 413 "$st"
check "413: OpenAI-shaped error" json_get "$B" error.message
expect_eq "toolgate errors sent nothing upstream" 0 "$(mock_count)"

# Upstream errors pass through unchanged, flagged with a header.
for code in 429 500; do
    st=$(chat "$B" '{"model":"gpt-4o","messages":[]}' -H 'X-Mock: status' -H "X-Mock-Status: $code")
    expect_eq "upstream $code: status relayed" "$code" "$st"
    expect_eq "upstream $code: body unchanged" '{"error":{"message":"mock failure","type":"server_error","param":null,"code":null}}' "$(cat "$B")"
    expect_eq "upstream $code: X-Toolgate-Upstream-Error header" "$code" "$(header_value "$B.h" X-Toolgate-Upstream-Error)"
done
expect_eq "upstream response headers forwarded (Retry-After)" "0" \
    "$(chat "$B" '{"model":"gpt-4o","messages":[]}' -H 'X-Mock: status' -H 'X-Mock-Status: 503' >/dev/null; header_value "$B.h" Retry-After)"

st=$(chat "$B" '{"model":"dead-1","messages":[]}')
expect_eq "upstream unreachable: 502" 502 "$st"
check "502: OpenAI-shaped error" json_get "$B" error.message

t0=$(now_ms)
st=$(chat "$B" '{"model":"slow-1","messages":[]}' -H 'X-Mock: stall')
dt=$(($(now_ms) - t0))
expect_eq "ttfb_timeout with a stalled upstream: 504" 504 "$st"
# not before ttfb_timeout; no upper bound, which a loaded machine may pass
# (a timeout that never fired leaves curl's 20 s and no 504 above)
if [ "$dt" -ge 800 ]; then ok "504 not before ttfb_timeout (${dt} ms)"; else not_ok "504 not before ttfb_timeout" "took ${dt} ms, ttfb_timeout = 1s"; fi

# Streams that break: reset after 2 chunks, and an upstream idle past idle_timeout.
for case in "reset|gpt-4o|-H X-Mock:reset" "idle|slow-1|-H X-Mock-Delay-Ms:2500"; do
    name=${case%%|*}
    rest=${case#*|}
    model=${rest%%|*}
    args=${rest#*|}
    # shellcheck disable=SC2086
    stream_times "$TG_TMP/broken" "$CHAT_URL" "{\"model\":\"$model\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}" $args -H 'X-Mock-Chunks: 3'
    check "broken stream ($name): an SSE error event, then [DONE]" "$PY" -c '
import json, sys
lines = [l.split(" ", 1)[1].strip() for l in open(sys.argv[1]) if l.strip()]
assert lines[-1] == "data: [DONE]", lines[-3:]
err = json.loads(lines[-2][len("data:"):])
assert isinstance(err.get("error"), dict) and err["error"].get("message"), err
assert any("choices" in l for l in lines[:-2]), "no chunk before the error"' "$TG_TMP/broken"
done

# /v1/models and other /v1/* paths pass through, body untouched.
direct=$(curl -s "$MOCK_URL/v1/models")
st=$(tg_req "$B" GET /v1/models)
expect_eq "GET /v1/models: 200" 200 "$st"
expect_eq "GET /v1/models: upstream body untouched" "$direct" "$(cat "$B")"
# A worker reuses its curl handles as the last round left them (proxy/
# upstream.c): each request's method and body are its own, whatever came
# before on the same handle (POST, GET, a body-less DELETE, in turns).
seq_ok=0
for i in 1 2 3 4 5 6; do
    a=$(chat "$B" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
    b=$(tg_req "$B.g" GET /v1/models)
    c=$(tg_req "$B.d" DELETE /v1/files/f-1)
    [ "$a $b $(cat "$B.g")" = "200 200 $direct" ] && [ "$c" = 404 ] && seq_ok=$((seq_ok + 1))
done
expect_eq "POST, GET and DELETE in turns: each goes up with its own method and body" 6 "$seq_ok"

# The proxy environment, read once per worker (proxy/upstream.c), keeps
# curl's rules: http_proxy (here the mock, which sees the absolute URL),
# all_proxy as the fallback, no_proxy past both, never HTTP_PROXY for http.
PXPORT=$(free_port)
PXCONF="$TG_TMP/proxyenv.conf"
{
    conf_server "$PXPORT"
    printf '[route far]\nmodels = *\nupstream = http://upstream.invalid:9/v1\ndialect = openai\nconnect_timeout = 2s\n\n'
} >"$PXCONF"
proxied() { # ENV...: the status of a chat through toolgate started with ENV, then the mock's path
    mock_reset
    SAVE_PID=$TG_PID SAVE_URL=$TG_URL SAVE_CONF=$TG_CONF
    TG_PID=
    env "$@" "$TG_BIN" serve -c "$PXCONF" >>"$TG_TMP/proxyenv.log" 2>&1 &
    TG_PID=$!
    TG_URL="http://127.0.0.1:$PXPORT"
    _i=0
    while [ $_i -lt 200 ] && [ "$(curl -s -o /dev/null -m 1 -w '%{http_code}' "$TG_URL/readyz")" != 200 ]; do
        sleep 0.05; _i=$((_i + 1))
    done
    printf '%s %s' "$(chat "$B.px" '{"model":"m","messages":[{"role":"user","content":"hi"}]}')" \
        "$(curl -s -m 5 "$MOCK_URL/_last" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("path", "-"))' 2>/dev/null)"
    stop_pid "$TG_PID" 20
    TG_PID=$SAVE_PID TG_URL=$SAVE_URL TG_CONF=$SAVE_CONF
}
expect_eq "http_proxy: the upstream is reached through the proxy" \
    "200 http://upstream.invalid:9/v1/chat/completions" "$(proxied http_proxy="$MOCK_URL" no_proxy=127.0.0.1)"
expect_eq "ALL_PROXY with the upstream in no_proxy: no proxy (the host does not resolve: 502)" \
    502 "$(proxied ALL_PROXY="$MOCK_URL" no_proxy=127.0.0.1,upstream.invalid | cut -d' ' -f1)"
expect_eq "HTTP_PROXY is not read for http (curl's httpoxy rule): no proxy" \
    502 "$(proxied HTTP_PROXY="$MOCK_URL" | cut -d' ' -f1)"
expect_eq "all_proxy serves http when http_proxy is unset" \
    "200 http://upstream.invalid:9/v1/chat/completions" "$(proxied all_proxy="$MOCK_URL" NO_PROXY=127.0.0.1)"
sanitizer_clean "toolgate (proxy environment)" "$TG_TMP/proxyenv.log"
mock_reset
tg_req "$B" POST /v1/embeddings -H 'Content-Type: application/json; charset=utf-8' --data-binary '{"input":"x","model":"e"}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "POST /v1/embeddings passed to the first route" "/first/v1/embeddings" "$(json_get "$TG_TMP/last" path)"
expect_eq "a passed body goes with the client's Content-Type" "application/json; charset=utf-8" \
    "$(json_get "$TG_TMP/last" headers.content-type)"
expect_eq "passthrough body untouched" '{"input":"x","model":"e"}' "$(json_get "$TG_TMP/last" body)"

# Header forwarding, both directions.
mock_reset
chat "$B" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' \
    -H 'Authorization: Bearer client-key' -H 'X-Foo: bar' -H 'Keep-Alive: timeout=5' \
    -H 'Connection: keep-alive' -H 'OpenAI-Organization: org-1' -H 'Accept-Encoding: identity' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "api_key route: Authorization replaced (\${VAR} expanded)" "Bearer sk-route-key" "$(json_get "$TG_TMP/last" headers.authorization)"
expect_eq "X-Foo (not on the allow-list, not in forward_headers) stays with toolgate" "" \
    "$(json_get "$TG_TMP/last" headers.x-foo)"
expect_eq "OpenAI-Organization (on the allow-list) forwarded upstream" "org-1" \
    "$(json_get "$TG_TMP/last" headers.openai-organization)"
rid=$(json_get "$TG_TMP/last" headers.x-request-id)
if [ -n "$rid" ]; then ok "X-Request-Id generated and sent upstream ($rid)"; else not_ok "X-Request-Id generated and sent upstream" "$(json_get "$TG_TMP/last" headers)"; fi
expect_eq "generated X-Request-Id echoed to the client" "$rid" "$(header_value "$B.h" X-Request-Id)"
# (the record must be there: a request that never reached the mock sends
# no hop-by-hop header either)
check "hop-by-hop headers (Connection, Keep-Alive) not forwarded" "$PY" -c '
import json, sys
h = json.load(open(sys.argv[1]))["headers"]
assert h.get("openai-organization") == "org-1", h
assert "connection" not in h and "keep-alive" not in h, h' "$TG_TMP/last"
# a chat round to a plain-http upstream goes over toolgate's own client,
# which decodes no content coding and says so, whatever the client asked
# for (own_client.sh checks libcurl's list with upstream_client = curl)
expect_eq "Accept-Encoding upstream: identity from toolgate's own client, not the client's" \
    "identity" "$(json_get "$TG_TMP/last" headers.accept-encoding)"
expect_eq "a chat body goes as application/json" "application/json" \
    "$(json_get "$TG_TMP/last" headers.content-type)"
chat "$B" '{"model":"glob-a-1","messages":[{"role":"user","content":"hi"}]}' \
    -H 'Authorization: Bearer client-key' -H 'X-Request-Id: req-it-42' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "route without api_key: client Authorization forwarded" "Bearer client-key" "$(json_get "$TG_TMP/last" headers.authorization)"
expect_eq "client X-Request-Id forwarded upstream" "req-it-42" "$(json_get "$TG_TMP/last" headers.x-request-id)"
expect_eq "client X-Request-Id echoed back" "req-it-42" "$(header_value "$B.h" X-Request-Id)"

# A client that goes away mid-stream cancels the upstream transfer.
aborted_before=$(mock_log | grep -c 'aborted')
curl -sN -m 1 -H 'Content-Type: application/json' -H 'X-Mock-Chunks: 40' -H 'X-Mock-Delay-Ms: 100' \
    --data-binary '{"model":"gpt-4o","stream":true,"messages":[]}' "$TG_URL/v1/chat/completions" >/dev/null 2>&1
i=0
while [ $i -lt 30 ] && [ "$(mock_log | grep -c 'aborted')" -le "$aborted_before" ]; do
    sleep 0.1
    i=$((i + 1))
done
if [ "$(mock_log | grep -c 'aborted')" -gt "$aborted_before" ]; then
    ok "client disconnect closes the upstream stream"
else
    not_ok "client disconnect closes the upstream stream" "the mock's 4 s stream was not aborted within 3 s of the client leaving"
fi
expect_eq "toolgate keeps serving after a client disconnect" 200 "$(chat "$B" '{"model":"gpt-4o","messages":[]}')"

# SIGTERM with a stream in flight: it completes, toolgate exits 0.
curl -sN -m 20 -H 'Content-Type: application/json' -H 'X-Mock-Chunks: 5' -H 'X-Mock-Delay-Ms: 200' \
    --data-binary '{"model":"gpt-4o","stream":true,"messages":[]}' "$TG_URL/v1/chat/completions" >"$TG_TMP/inflight" 2>&1 &
curl_pid=$!
sleep 0.4
stop_toolgate
wait $curl_pid
expect_eq "SIGTERM: toolgate exits 0" 0 "$TG_STATUS"
expect_match "SIGTERM: the in-flight stream finished" 'tok4 .*\[DONE\]' "$(tr '\n' ' ' <"$TG_TMP/inflight")"

# client_keys: a second instance that requires a key.
PORT2=$(free_port)
KCONF="$TG_TMP/keys.conf"
export TG_IT_CLIENT_KEYS="key-one,key-two"
{
    conf_server "$PORT2" 'client_keys = ${TG_IT_CLIENT_KEYS}'
    conf_route main 'gpt-*'
} >"$KCONF"
if start_toolgate "$KCONF"; then
    expect_eq "client_keys: no key is 401" 401 "$(chat "$B" '{"model":"gpt-4o","messages":[]}')"
    check "401: OpenAI-shaped error" json_get "$B" error.message
    expect_eq "client_keys: wrong key is 401" 401 "$(chat "$B" '{"model":"gpt-4o","messages":[]}' -H 'Authorization: Bearer nope')"
    expect_eq "client_keys: a listed key is accepted" 200 "$(chat "$B" '{"model":"gpt-4o","messages":[]}' -H 'Authorization: Bearer key-two')"
    stop_toolgate
fi

finish
