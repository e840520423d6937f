#!/bin/sh
# forced_stream.sh -- a provider that answers in the other mode than asked
# (docs/configuration.md, "Upstream errors"): one that streams although the
# agent asked for one answer (a backend that always streams, a gateway
# forcing SSE: BerriAI/litellm#34095) gets its chunks folded into the
# chat.completion they stand for (repair/collect.c), said in
# X-Toolgate-Translated; one that answers whole to a streaming request gets
# its answer sent as the stream asked for. Plain text, one call, parallel
# calls, Gemini's index-less calls; on an openai, a gemini and a mistral
# route; through the Responses and Messages bridges. The mock's X-Mock-Force
# header picks the provider's mode.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock
start_script_upstream apisse "$TG_ROOT/test/integration/api_sse_upstream.py"
API_PID=$UP_PID
trap '_st=$?; kill $API_PID 2>/dev/null; (exit $_st); stop_all' EXIT
PORT=$(free_port)
CONF="$TG_TMP/forced.conf"
{
    conf_server "$PORT"
    printf '[route claude]\nmodels = claude-*\nupstream = http://127.0.0.1:%s/v1\ndialect = anthropic\n\n' "$UP_PORT"
    printf '[route passed]\nmodels = passed-*\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nresponses = pass\n\n' "$UP_PORT"
    printf '[route disc]\nprefix = /disc\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\ndiscovery = on\n\n' "$MOCK_PORT"
    printf '[route gemini]\nmodels = gemini-*\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\n\n' "$MOCK_PORT"
    printf '[route mistral]\nmodels = mistral-*\nupstream = http://127.0.0.1:%s/v1\ndialect = mistral\n\n' "$MOCK_PORT"
    conf_route openai '*'
} >"$CONF"
start_toolgate "$CONF" || finish

TOOLS='[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
"properties":{"location":{"type":"string"}},"required":["location"]}}}]'

# gist FILE MODE: what an agent reads of the answer, whole or streamed:
# "text=<content> calls=<n> names=<...> args_ok=<0|1> finish=<f>", or
# "bad: <why>" when the body is not the mode's shape.
gist() {
    "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
body = open(sys.argv[1], encoding="utf-8", errors="replace").read()
mode = sys.argv[2]
text, calls, finish = "", {}, None
try:
    if mode == "whole":
        v = json.loads(body)
        ch = v["choices"][0]
        assert v["object"] == "chat.completion", "object " + str(v.get("object"))
        m = ch["message"]
        text = m.get("content") or ""
        for i, tc in enumerate(m.get("tool_calls") or []):
            calls[i] = [tc["function"]["name"], tc["function"]["arguments"], tc["id"]]
        finish = ch["finish_reason"]
    else:
        assert body.lstrip().startswith("data:"), "not an event stream: " + body[:80]
        done = False
        for line in body.splitlines():
            if not line.startswith("data:"):
                continue
            d = line[5:].strip()
            if d == "[DONE]":
                done = True
                continue
            ch = json.loads(d)["choices"]
            for c in ch:
                dl = c.get("delta", {})
                text += dl.get("content") or ""
                for tc in dl.get("tool_calls") or []:
                    k = calls.setdefault(tc["index"], ["", "", ""])
                    k[0] += tc.get("function", {}).get("name") or ""
                    k[1] += tc.get("function", {}).get("arguments") or ""
                    k[2] += tc.get("id") or ""
                if c.get("finish_reason"):
                    finish = c["finish_reason"]
        assert done, "no [DONE]"
    ok = all(isinstance(json.loads(a), dict) and i for n, a, i in calls.values())
    print("text=%s calls=%d names=%s args_ok=%d finish=%s" % (
        text.strip()[:20].replace(" ", "_"), len(calls),
        ",".join(sorted(n for n, a, i in calls.values())), int(ok), finish))
except Exception as e:
    print("bad: %r" % e)
PYEOF
}

# one ROUTE_MODEL SCENARIO ASKED FORCED EXPECT: ASKED is what the agent asks
# (whole or stream), FORCED what the provider does; EXPECT is matched
# against the gist.
one() {
    stream=false
    [ "$3" = stream ] && stream=true
    body="{\"model\":\"$1\",\"stream\":$stream,\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris and Rome?\"}],\"tools\":$TOOLS}"
    code=$(chat "$TG_TMP/f.out" "$body" -H "X-Mock: $2" -H "X-Mock-Force: $4" -H "X-Mock-Calls: 2")
    g=$(gist "$TG_TMP/f.out" "$3")
    name="$1 $2, asked $3, provider $4: $5"
    if [ "$code" = 200 ] && printf '%s' "$g" | grep -Eq "$5"; then
        ok "$name"
    else
        not_ok "$name" "status $code, gist: $g
$(head -c 600 "$TG_TMP/f.out")"
    fi
    said=whole-streamed
    [ "$3" = whole ] && said=stream-folded
    case "$(header_value "$TG_TMP/f.out.h" X-Toolgate-Translated)" in
        *"answer $said"*) ;;
        *) not_ok "$name: X-Toolgate-Translated says answer $said" "$(cat "$TG_TMP/f.out.h")" ;;
    esac
    type=$(header_value "$TG_TMP/f.out.h" Content-Type)
    want=application/json
    [ "$3" = stream ] && want=text/event-stream
    case "$type" in "$want"*) ;; *) not_ok "$name: Content-Type $want" "got $type" ;; esac
}

for model in gpt-4o gemini-2.5-pro mistral-large; do
    one "$model" default whole stream '^text=[^ ]+ calls=0 .*finish=stop$'
    one "$model" tools whole stream 'calls=1 names=get_weather args_ok=1 finish=tool_calls$'
    one "$model" parallel whole stream 'calls=2 names=get_weather,get_weather args_ok=1 finish=tool_calls$'
    one "$model" default stream whole '^text=[^ ]+ calls=0 .*finish=stop$'
    one "$model" tools stream whole 'calls=1 names=get_weather args_ok=1 finish=tool_calls$'
    one "$model" parallel stream whole 'calls=2 names=get_weather,get_weather args_ok=1 finish=tool_calls$'
done

# Gemini's index-less parallel calls (X-Mock-Style: gemini) folded into two
# calls, as the stream repair reads them.
code=$(chat "$TG_TMP/g.out" "{\"model\":\"gemini-2.5-pro\",\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}],\"tools\":$TOOLS}" \
    -H 'X-Mock: parallel' -H 'X-Mock-Force: stream' -H 'X-Mock-Style: gemini' -H 'X-Mock-Calls: 2')
expect_match "gemini style, folded: two calls, each with its own id" \
    'calls=2 names=get_weather,get_weather args_ok=1 finish=tool_calls' "$(gist "$TG_TMP/g.out" whole)"
expect_match "the fold is said in X-Toolgate-Translated" 'answer stream-folded' \
    "$(header_value "$TG_TMP/g.out.h" X-Toolgate-Translated)"

# Through the bridges: a Responses and a Messages request asked whole.
code=$(tg_req "$TG_TMP/r.out" POST /v1/responses -H 'Content-Type: application/json' -H 'X-Mock: tools' \
    -H 'X-Mock-Force: stream' --data-binary \
    '{"model":"gpt-4o","input":"Weather in Paris?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}]}')
expect_match "Responses asked whole, provider streams: a response with the function_call" \
    '200 response function_call get_weather' \
    "$code $(json_get "$TG_TMP/r.out" object) $(json_get "$TG_TMP/r.out" output.-1.type) $(json_get "$TG_TMP/r.out" output.-1.name)"
code=$(tg_req "$TG_TMP/m.out" POST /v1/messages -H 'Content-Type: application/json' -H 'X-Mock: tools' \
    -H 'X-Mock-Force: stream' -H 'anthropic-version: 2023-06-01' --data-binary \
    '{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"location":{"type":"string"}}}}]}')
expect_match "Messages asked whole, provider streams: a message with the tool_use" \
    '200 message tool_use get_weather tool_use' \
    "$code $(json_get "$TG_TMP/m.out" type) $(json_get "$TG_TMP/m.out" content.-1.type) $(json_get "$TG_TMP/m.out" content.-1.name) $(json_get "$TG_TMP/m.out" stop_reason)"

# Discovery rounds toolgate builds, each answered in the other mode: the
# agent gets its real tool's call, and Gemini's signatures ride back on
# every round.
DTOOLS=$("$PY" -c '
import json
print(json.dumps([{"type": "function", "function": {"name": n, "description": d,
    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}
    for n, d in [("get_weather", "the weather forecast for a city"), ("send_mail", "sends an email"),
                 ("read_file", "reads a file")]]))')
for asked in false true; do
    force=stream
    [ $asked = true ] && force=whole
    code=$(tg_req "$TG_TMP/d.out" POST /disc/v1/chat/completions -H 'Content-Type: application/json' \
        -H 'X-Mock: discovery' -H 'X-Mock-Signature: sig-Zm9v' -H "X-Mock-Force: $force" --data-binary \
        "{\"model\":\"gemini-3-pro\",\"stream\":$asked,\"messages\":[{\"role\":\"user\",\"content\":\"weather forecast\"}],\"tools\":$DTOOLS}")
    mock_last "$TG_TMP/dlast"
    signed=$("$PY" - "$TG_TMP/dlast" <<'PYEOF'
import json, sys
b = json.loads(json.load(open(sys.argv[1]))["body"])
calls = [c for m in b["messages"] for c in m.get("tool_calls", []) if c["id"].startswith("call_disc")]
ok = [c for c in calls if c.get("extra_content", {}).get("google", {}).get("thought_signature") == "sig-Zm9v"]
print("%d/%d" % (len(ok), len(calls)))
PYEOF
)
    mode=whole
    [ $asked = true ] && mode=stream
    expect_match "discovery, asked $mode, provider $force: the real tool's call, signatures on every round" \
        "^200 signed 2/2 .*calls=1 names=get_weather args_ok=1" "$code signed $signed $(gist "$TG_TMP/d.out" $mode)"
done

# Bridged, asked as a stream, answered whole: the API's own stream, plain
# text as well as a call.
for sc in default tools; do
    code=$(tg_req "$TG_TMP/rs.out" POST /v1/responses -H 'Content-Type: application/json' -H "X-Mock: $sc" \
        -H 'X-Mock-Force: whole' --data-binary \
        '{"model":"gpt-4o","stream":true,"input":"Weather in Paris?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}]}')
    expect_match "Responses asked as a stream ($sc), provider answers whole: a Responses stream" \
        '^200 .*event: response.completed' "$code $(tr '\n' ' ' <"$TG_TMP/rs.out")"
    code=$(tg_req "$TG_TMP/ms.out" POST /v1/messages -H 'Content-Type: application/json' -H "X-Mock: $sc" \
        -H 'X-Mock-Force: whole' -H 'anthropic-version: 2023-06-01' --data-binary \
        '{"model":"gpt-4o","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"location":{"type":"string"}}}}]}')
    expect_match "Messages asked as a stream ($sc), provider answers whole: a Messages stream" \
        '^200 .*event: message_stop' "$code $(tr '\n' ' ' <"$TG_TMP/ms.out")"
done

# Gemini's API (Gemini CLI), bridged over a chat provider in the other mode.
GEM='{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"location":{"type":"STRING"}}}}]}]}'
code=$(tg_req "$TG_TMP/g1.out" POST '/v1beta/models/gemini-2.5-pro:generateContent' -H 'Content-Type: application/json' \
    -H 'X-Mock: tools' -H 'X-Mock-Force: stream' --data-binary "$GEM")
expect_eq "Gemini API generateContent, provider streams: one response with the functionCall" \
    "200 get_weather STOP" \
    "$code $(json_get "$TG_TMP/g1.out" candidates.0.content.parts.0.functionCall.name) $(json_get "$TG_TMP/g1.out" candidates.0.finishReason)"
code=$(tg_req "$TG_TMP/g2.out" POST '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse' -H 'Content-Type: application/json' \
    -H 'X-Mock: default' -H 'X-Mock-Force: whole' --data-binary "$GEM")
expect_match "Gemini API streamGenerateContent, provider answers whole: an SSE stream ending in STOP" \
    '^200 data: .*"finishReason":"STOP"' "$code $(tr '\n' ' ' <"$TG_TMP/g2.out")"

# Passed through: an Anthropic route's /v1/messages and a `responses = pass`
# route's /v1/responses, asked whole, answered with the API's event stream.
msg='{"max_tokens":100,"messages":[{"role":"user","content":"Weather in Paris?"}]}'
code=$(tg_req "$TG_TMP/pm.out" POST /v1/messages -H 'Content-Type: application/json' \
    -H 'anthropic-version: 2023-06-01' --data-binary "{\"model\":\"claude-x\",${msg#\{}")
expect_eq "Messages passed, asked whole: the folded message" \
    '200 message thinking:Let me see.:SIG1 text:Checking Paris. tool_use:{"location":"Paris"} tool_use 42' \
    "$code $("$PY" -c '
import json, sys
m = json.load(open(sys.argv[1]))
c = m["content"]
print(m["type"], "thinking:%s:%s" % (c[0]["thinking"], c[0]["signature"]), "text:" + c[1]["text"],
      "tool_use:" + json.dumps(c[2]["input"], separators=(",", ":")), m["stop_reason"], m["usage"]["output_tokens"])
' "$TG_TMP/pm.out" 2>&1)"
expect_match "Messages passed: Content-Type is JSON, the fold said" 'application/json answer stream-folded' \
    "$(header_value "$TG_TMP/pm.out.h" Content-Type) $(header_value "$TG_TMP/pm.out.h" X-Toolgate-Translated)"
code=$(tg_req "$TG_TMP/pe.out" POST /v1/messages -H 'Content-Type: application/json' \
    -H 'anthropic-version: 2023-06-01' --data-binary "{\"model\":\"claude-x-err\",${msg#\{}")
expect_eq "Messages passed, an error event: the provider's error, not a 200" '502 error overloaded_error' \
    "$code $(json_get "$TG_TMP/pe.out" type) $(json_get "$TG_TMP/pe.out" error.type)"
code=$(tg_req "$TG_TMP/ps.out" POST /v1/messages -H 'Content-Type: application/json' \
    -H 'anthropic-version: 2023-06-01' --data-binary "{\"model\":\"claude-x\",\"stream\":true,${msg#\{}")
expect_match "Messages passed, asked as a stream: relayed as the stream" 'event: message_stop' "$(tail -c 200 "$TG_TMP/ps.out")"
code=$(tg_req "$TG_TMP/pr.out" POST /v1/responses -H 'Content-Type: application/json' \
    --data-binary '{"model":"passed-m","input":"Weather in Paris?"}')
expect_eq "Responses passed, asked whole: the completed Response" '200 response completed message,function_call' \
    "$code $("$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["object"], r["status"], ",".join(i["type"] for i in r["output"]))' "$TG_TMP/pr.out" 2>&1)"
code=$(tg_req "$TG_TMP/pc.out" POST /v1/responses -H 'Content-Type: application/json' \
    --data-binary '{"model":"passed-m-cut","input":"Weather in Paris?"}')
expect_eq "Responses passed, no terminal event: the last Response with the items done" \
    '200 in_progress message,function_call' \
    "$code $("$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["status"], ",".join(i["type"] for i in r["output"]))' "$TG_TMP/pc.out" 2>&1)"

stop_toolgate
finish
