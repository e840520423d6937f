#!/bin/sh
# rounds.sh -- the turns toolgate builds itself (inner discovery rounds),
# end to end against the mock's scripted discovery model:
#   - they carry the provider's opaque fields back as they came (Gemini 3's
#     thought signature, R18/R19: the mock refuses a replayed call that lost
#     it, as Gemini does), whole and streamed;
#   - a round the provider refuses reaches the client as the provider's
#     error (status, message, code), in the API's own shape (chat, the
#     Responses and the Messages bridges), streamed and whole, logged and
#     counted; a streamed answer says it is text/event-stream.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock

PORT=$(free_port)
CONF="$TG_TMP/rounds.conf"
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = info\nforward_headers = x-mock*\n\n' "$PORT"
    printf '[route gem]\nprefix = /gem\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\ndiscovery = on\n\n' "$MOCK_PORT"
    # each provider's validator (mock_strict.c) over the meta-tools
    for d in openai-strict cerebras gemini vertex mistral groq fireworks anthropic; do
        printf '[route s-%s]\nprefix = /s-%s\nupstream = http://127.0.0.1:%s/as/strict:%s/v1\ndialect = %s\ndiscovery = on\n\n' \
            "$d" "$d" "$MOCK_PORT" "${d%-strict}" "$d"
    done
} >"$CONF"
start_toolgate "$CONF" || finish
B="$TG_TMP/body"

# five tools, all behind the meta-tools (discovery = on)
TOOLS=$("$PY" -c '
import json
print(json.dumps([{"type": "function", "function": {"name": n, "description": d,
    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}
    for n, d in [("get_weather", "the weather forecast for a city"), ("send_mail", "sends an email"),
                 ("read_file", "reads a file"), ("list_events", "calendar events of a day"),
                 ("add_note", "adds a note")]]))')
body() {  # body STREAM: a chat request that starts a discovery
    printf '{"model":"gemini-3-pro","stream":%s,"messages":[{"role":"user","content":"weather forecast"}],"tools":%s}' "$1" "$TOOLS"
}
# signed: "n/m", of the m calls the mock made that its last request
# replayed, n carry the signature it gave them
signed() {
    mock_last "$TG_TMP/last"
    "$PY" - "$TG_TMP/last" <<'EOF'
import json, sys
b = json.loads(json.load(open(sys.argv[1]))["body"])
calls = [c for m in b["messages"] for c in m.get("tool_calls", []) if c["id"].startswith("call_disc")]
ok = [c for c in calls if c.get("extra_content", {}).get("google", {}).get("thought_signature") == "sig-Zm9v"]
print("%d/%d" % (len(ok), len(calls)))
EOF
}
SIG='X-Mock-Signature: sig-Zm9v'

# ---- opaque fields ride back on the rounds toolgate builds ----------------

st=$(tg_req "$B" POST /gem/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$SIG" --data-binary "$(body false)")
expect_eq "whole: the rounds after a signed search_tools call are accepted" 200 "$st"
expect_eq "whole: the agent gets its real tool's call" get_weather "$(json_get "$B" choices.0.message.tool_calls.0.function.name)"
expect_eq "whole: both replayed calls carry the signature as Gemini gave it" 2/2 "$(signed)"

st=$(tg_req "$B" POST /gem/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$SIG" --data-binary "$(body true)")
expect_eq "streamed: answered" 200 "$st"
expect_match "streamed: the agent gets its real tool's call" '"name":"get_weather"' "$(cat "$B")"
expect_eq "streamed: both replayed calls carry the signature" 2/2 "$(signed)"
if grep -q '"error"' "$B"; then not_ok "streamed: no error event" "$(head -c 1500 "$B")"; else ok "streamed: no error event"; fi
expect_match "streamed discovery answers are text/event-stream" '^text/event-stream' \
    "$(header_value "$B.h" Content-Type)"

# ---- the meta-tools' schemas pass every strict provider ---------------------
# search_tools' group is an enum of the catalog's groups, nullable (null in
# the enum) where the dialect makes every property required
GT=$("$PY" -c '
import json
print(json.dumps([{"type": "function", "function": {"name": "%s_%s" % (g, v), "description": "%s the %s" % (v, g),
    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}
    for g in ("github", "slack", "docker") for v in ("list", "get", "stop")]))')
for d in openai-strict cerebras gemini vertex mistral groq fireworks anthropic; do
    st=$(tg_req "$B" POST "/s-$d/v1/chat/completions" -H 'Content-Type: application/json' \
        --data-binary "{\"model\":\"gemini-3-pro\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":$GT}")
    expect_eq "$d: the strict provider takes the meta-tools (group an enum)" 200 "$st"
done
mock_last "$TG_TMP/last"
expect_match "... the group enum went upstream" '\\"enum\\":\[\\"docker\\",\\"github\\",\\"slack\\"\]' "$(cat "$TG_TMP/last")"

# ---- a client that drops the signature gets it put back (issue 31) ---------
# Turn 1 gives the agent its call (signed: the provider's fields ride on it,
# also when toolgate turned call_tool into it); turn 2 replays that call
# without extra_content, as many clients do (and the Messages bridge must):
# toolgate restores the signature from its item store, so the mock, which
# refuses anything but its own signature, takes the turn.
# replay ANSWER STREAM [drop]: turn 2's chat body, the call of ANSWER replayed
replay() {
    "$PY" - "$1" "$2" "$3" "$TOOLS" <<'EOF2'
import json, sys
text = open(sys.argv[1]).read()
if text.lstrip().startswith("{"):
    call = json.loads(text)["choices"][0]["message"]["tool_calls"][0]
else:
    call = {"function": {"arguments": ""}}
    for l in text.splitlines():
        if not l.startswith("data: ") or l[6:] == "[DONE]":
            continue
        for ch in json.loads(l[6:]).get("choices", []):
            for tc in ch.get("delta", {}).get("tool_calls", []) or []:
                for k, v in tc.items():
                    if k == "function":
                        for fk, fv in v.items():
                            call["function"][fk] = call["function"].get(fk, "") + fv if fk == "arguments" else fv
                    elif k != "index":
                        call[k] = v
sig = call.get("extra_content", {}).get("google", {}).get("thought_signature", "-")
if sys.argv[3] == "drop":
    call.pop("extra_content", None)
print(json.dumps({"model": "gemini-3-pro", "stream": sys.argv[2] == "true", "messages": [
    {"role": "user", "content": "weather forecast"},
    {"role": "assistant", "tool_calls": [call]},
    {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}],
    "tools": json.loads(sys.argv[4])}))
print(sig, file=sys.stderr)
EOF2
}
for stream in false true; do
    for how in call_tool direct; do
        st=$(tg_req "$B" POST /gem/v1/chat/completions -H 'Content-Type: application/json' \
            -H 'X-Mock: discovery' -H "X-Mock-Discovery: $how" -H "$SIG" --data-binary "$(body $stream)")
        T2=$(replay "$B" "$stream" drop 2>"$TG_TMP/sig")
        expect_eq "stream=$stream $how: the agent's call carries the provider's signature" sig-Zm9v "$(cat "$TG_TMP/sig")"
        st=$(tg_req "$B" POST /gem/v1/chat/completions -H 'Content-Type: application/json' \
            -H 'X-Mock: discovery' -H "X-Mock-Discovery: $how" -H "$SIG" --data-binary "$T2")
        expect_eq "stream=$stream $how: the replay without extra_content is taken" 200 "$st"
        expect_eq "stream=$stream $how: ... with the signature put back" 1/1 "$(signed)"
    done
done
# through the Messages bridge, which has no place for the signature at all
MSG1=$("$PY" -c '
import json, sys
tools = json.loads(sys.argv[1])
print(json.dumps({"model": "gemini-3-pro", "max_tokens": 100,
    "messages": [{"role": "user", "content": "weather forecast"}],
    "tools": [{"name": t["function"]["name"], "description": t["function"]["description"],
               "input_schema": t["function"]["parameters"]} for t in tools]}))' "$TOOLS")
for stream in false true; do
    M1=$MSG1
    [ "$stream" = true ] && M1=$(printf '%s' "$MSG1" | sed 's/"max_tokens"/"stream": true, "max_tokens"/')
    st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' \
        -H 'X-Mock: discovery' -H "$SIG" --data-binary "$M1")
    expect_eq "Messages stream=$stream: turn 1 answered" 200 "$st"
    MSG2=$("$PY" - "$B" "$M1" <<'EOF2'
import json, sys
text = open(sys.argv[1]).read()
body = json.loads(sys.argv[2])
if text.lstrip().startswith("{"):
    use = [b for b in json.loads(text)["content"] if b["type"] == "tool_use"]
else:  # the stream: content_block_start of a tool_use, its input in deltas
    use, args = [], ""
    for l in text.splitlines():
        if not l.startswith("data: "):
            continue
        ev = json.loads(l[6:])
        if ev.get("type") == "content_block_start" and ev["content_block"]["type"] == "tool_use":
            use.append(dict(ev["content_block"]))
        elif ev.get("type") == "content_block_delta" and ev["delta"].get("type") == "input_json_delta":
            args += ev["delta"]["partial_json"]
    use[0]["input"] = json.loads(args or "{}")
    body.pop("stream", None)
body["messages"] += [{"role": "assistant", "content": use},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use[0]["id"], "content": "sunny"}]}]
print(json.dumps(body))
EOF2
    )
    st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' \
        -H 'X-Mock: discovery' -H "$SIG" --data-binary "$MSG2")
    expect_eq "Messages stream=$stream: the replayed tool_use (no signature possible) is taken" 200 "$st"
    expect_eq "Messages stream=$stream: ... with the signature put back" 1/1 "$(signed)"
done
# and through the Responses bridge (store: false, the items sent back whole)
RS1=$("$PY" -c '
import json, sys
tools = json.loads(sys.argv[1])
print(json.dumps({"model": "gemini-3-pro", "store": False, "input": "weather forecast",
    "tools": [dict(type="function", **t["function"]) for t in tools]}))' "$TOOLS")
st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$SIG" --data-binary "$RS1")
expect_eq "Responses: turn 1 answered" 200 "$st"
RS2=$("$PY" - "$B" "$RS1" <<'EOF2'
import json, sys
ans = json.load(open(sys.argv[1]))
body = json.loads(sys.argv[2])
fc = [o for o in ans["output"] if o["type"] == "function_call"][0]
body["input"] = [{"role": "user", "content": "weather forecast"},
    {"type": "function_call", "call_id": fc["call_id"], "name": fc["name"], "arguments": fc["arguments"]},
    {"type": "function_call_output", "call_id": fc["call_id"], "output": "sunny"}]
print(json.dumps(body))
EOF2
)
st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$SIG" --data-binary "$RS2")
expect_eq "Responses: the replayed function_call is taken" 200 "$st"
expect_eq "Responses: ... with the signature put back" 1/1 "$(signed)"
expect_match "restores are logged" 'restored from the store' "$(cat "$TG_LOG")"
tg_req "$B" GET /metrics >/dev/null
expect_match "... and counted: 4 chat turns, 2 Messages, 1 Responses" '^toolgate_signatures_restored_total 7$' "$(cat "$B")"

# ---- a refused round reaches the client as the provider's error -------------

REF='X-Mock-Refuse-Round: 1'
st=$(tg_req "$B" POST /gem/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$REF" --data-binary "$(body false)")
expect_eq "whole: a refused round is the provider's status" 400 "$st"
expect_eq "whole: ... and its code" round_refused "$(json_get "$B" error.code)"

st=$(tg_req "$B" POST /gem/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$REF" --data-binary "$(body true)")
"$PY" - "$B" >"$TG_TMP/ev" <<'EOF'
import json, sys
events = [l[6:] for l in open(sys.argv[1]).read().splitlines() if l.startswith("data: ")]
err = [json.loads(e)["error"] for e in events if e != "[DONE]" and "error" in json.loads(e)]
print(len(err), err[0].get("code") if err else "", err[0].get("status") if err else "",
      err[0].get("message") if err else "", events[-1] if events else "")
EOF
if [ "$st" = 400 ]; then
    expect_eq "streamed chat: refused before a byte went out, the provider's status" round_refused "$(json_get "$B" error.code)"
else
    expect_eq "streamed chat: the provider's error (code, status, message), then [DONE]" \
        "1 round_refused 400 mock: round 1 refused [DONE]" "$(cat "$TG_TMP/ev")"
fi

# the model said nothing before its search call: no byte has reached the
# client when the next round is refused, so the answer is the error itself
st=$(tg_req "$B" POST /gem/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$REF" -H 'X-Mock-Quiet: 1' --data-binary "$(body true)")
expect_eq "streamed chat, nothing sent yet: the provider's status" 400 "$st"
expect_eq "streamed chat, nothing sent yet: its code" round_refused "$(json_get "$B" error.code)"

RESP=$("$PY" -c '
import json, sys
tools = json.loads(sys.argv[1])
print(json.dumps({"model": "gemini-3-pro", "stream": True, "input": "weather forecast",
    "tools": [dict(type="function", **t["function"]) for t in tools]}))' "$TOOLS")
st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$REF" --data-binary "$RESP")
expect_match "streamed Responses: an error event with the provider's code" \
    '"type":"error".*"code":"round_refused".*"message":"mock: round 1 refused"|"code":"round_refused".*"type":"error"' "$(cat "$B")"
expect_match "streamed Responses: then response.failed" 'event: response.failed' "$(cat "$B")"

MSG=$("$PY" -c '
import json, sys
tools = json.loads(sys.argv[1])
print(json.dumps({"model": "gemini-3-pro", "stream": True, "max_tokens": 100,
    "messages": [{"role": "user", "content": "weather forecast"}],
    "tools": [{"name": t["function"]["name"], "description": t["function"]["description"],
               "input_schema": t["function"]["parameters"]} for t in tools]}))' "$TOOLS")
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$REF" --data-binary "$MSG")
expect_match "streamed Messages: Anthropic's error event with the provider's message" \
    'event: error' "$(cat "$B")"
expect_match "streamed Messages: ... naming it" 'mock: round 1 refused' "$(cat "$B")"

# whole, through the bridges: the error answer in each API's shape
st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$REF" --data-binary "$(printf '%s' "$RESP" | sed 's/"stream": true/"stream": false/')")
expect_eq "whole Responses: the provider's status" 400 "$st"
expect_eq "whole Responses: its code" round_refused "$(json_get "$B" error.code)"
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' -H "$REF" --data-binary "$(printf '%s' "$MSG" | sed 's/"stream": true/"stream": false/')")
expect_eq "whole Messages: the provider's status" 400 "$st"
expect_eq "whole Messages: Anthropic's error shape with the provider's message" \
    "error invalid_request_error mock: round 1 refused" \
    "$(json_get "$B" type) $(json_get "$B" error.type) $(json_get "$B" error.message)"

tg_req "$B" GET /metrics >/dev/null
expect_match "refused rounds are counted" '^toolgate_discovery_round_errors_total 7$' "$(cat "$B")"
expect_match "refused rounds are logged" 'refused discovery round 1 with 400: .*round_refused' \
    "$(cat "$TG_LOG")"

stop_toolgate
# every line of the log is in, once toolgate has exited
expect_match "streamed chat, nothing sent yet: the access log says 400" \
    '"status":400,"stream":true' "$(cat "$TG_LOG")"
finish
