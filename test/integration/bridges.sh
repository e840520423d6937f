#!/bin/sh
# bridges.sh -- what the agent-API bridges do with what a chat upstream
# cannot carry, end to end: a base URL check (HEAD /prefix, Claude Code's),
# hosted tools left out and said so (X-Toolgate-Dropped, the log, the
# metrics) or refused on a route with hosted_tools = refuse; Gemini's API
# bridged, or passed to Gemini's native API on a route with gemini = pass;
# Claude Code's flows through the Messages bridge: a PDF it Read (a file
# part on an openai route, its text elsewhere, said in
# X-Toolgate-Translated), the tools its ToolSearch loaded, count_tokens
# (and Responses' input_tokens) answered with an estimate.
# With no client_keys, two clients told apart by their provider keys alone
# keep their Responses items and chains apart in the memory store (owners.py);
# the stored-response endpoints (GET, DELETE, input_items, cancel of
# /v1/responses/{id}) are answered from that store (stored.py).
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock

PORT=$(free_port)
CONF="$TG_TMP/bridges.conf"
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = info\nforward_headers = x-mock*\n\n' "$PORT"
    printf '[route gem]\nprefix = /gem\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\n\n' "$MOCK_PORT"
    printf '[route gpass]\nprefix = /gpass\nupstream = http://127.0.0.1:%s/v1beta/openai\ndialect = gemini\ngemini = pass\napi_key = route-key\n\n' "$MOCK_PORT"
    printf '[route oai]\nprefix = /oai\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route disc]\nprefix = /disc\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\ndiscovery = on\n\n' "$MOCK_PORT"
    printf '[route disca]\nprefix = /disca\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\ndiscovery = auto\ndiscovery_threshold = 30\n\n' "$MOCK_PORT"
    printf '[route strict]\nprefix = /strict\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nhosted_tools = refuse\n\n' "$MOCK_PORT"
    printf '[route so]\nprefix = /so\nupstream = http://127.0.0.1:%s/as/strict:openai/v1\ndialect = openai-strict\n\n' "$MOCK_PORT"
    printf '[route ali]\nprefix = /ali\nmodels = fast, quick, fast-*\nupstream_model = mock-default\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route lst]\nprefix = /lst\nmodels = lst-a, lst-b, lst-*\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route anth]\nprefix = /anth\nupstream = http://127.0.0.1:%s/v1\ndialect = anthropic\n\n' "$MOCK_PORT"
    conf_route main '*'
} >"$CONF"
start_toolgate "$CONF" || finish
B="$TG_TMP/body"

# ---- the base URL answers --------------------------------------------------

st=$(curl -s -m 10 -I -o /dev/null -w '%{http_code}' "$TG_URL/gem")
expect_eq "HEAD /<prefix> (Claude Code's base URL check) is 200" 200 "$st"
st=$(curl -s -m 10 -I -o /dev/null -w '%{http_code}' "$TG_URL/")
expect_eq "HEAD / is 200" 200 "$st"
st=$(curl -s -m 10 -I -o /dev/null -w '%{http_code}' "$TG_URL/gem/api/hello")
expect_eq "HEAD /<prefix>/api/hello (what Claude Code 2.1.332 really sends) is 200" 200 "$st"
st=$(tg_req "$B" GET /gem/)
expect_eq "GET /<prefix>/ is 200" 200 "$st"

# ---- hosted tools: dropped, and said so ------------------------------------

RESP='{"model":"mock-default","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}},{"type":"web_search","external_web_access":false},{"type":"image_generation"}]}'
st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' --data-binary "$RESP")
expect_eq "Responses: a request with web_search and image_generation is answered" 200 "$st"
expect_eq "Responses: X-Toolgate-Dropped names the tools left out" \
    "tools web_search, image_generation" "$(header_value "$B.h" X-Toolgate-Dropped)"
mock_last "$TG_TMP/last"
expect_eq "Responses: only the function tool went upstream" '["f"]' \
    "$("$PY" -c 'import json,sys; b=json.loads(json.load(open(sys.argv[1]))["body"]); print(json.dumps([t["function"]["name"] for t in b["tools"]]))' "$TG_TMP/last")"

MSG='{"model":"mock-default","max_tokens":50,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2},{"name":"g","input_schema":{"type":"object"}}],"mcp_servers":[{"type":"url","url":"https://mcp.example","name":"x"}]}'
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' --data-binary "$MSG")
expect_eq "Messages: a request with a server tool and mcp_servers is answered" 200 "$st"
expect_eq "Messages: X-Toolgate-Dropped names them" \
    "fields mcp_servers; tools web_search_20250305" "$(header_value "$B.h" X-Toolgate-Dropped)"

st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' --data-binary '{"model":"mock-default","input":"hi"}')
expect_eq "a request with nothing to drop is answered, and has no X-Toolgate-Dropped" "200 " \
    "$st $(header_value "$B.h" X-Toolgate-Dropped)"

tg_req "$B" GET /metrics >/dev/null
expect_match "the drops are counted (toolgate_bridge_dropped_total)" \
    '^toolgate_bridge_dropped_total 4$' "$(cat "$B")"
expect_match "the drops are logged" 'bridge dropped what its chat upstream cannot run: tools web_search' \
    "$(cat "$TG_LOG")"

# ---- top-level parameters the target refuses: dropped, and said so --------

CHAT='{"model":"mock-default","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"disabled"},"top_k":40}'
st=$(tg_req "$B" POST /strict/v1/chat/completions -H 'Content-Type: application/json' --data-binary "$CHAT")
expect_eq "chat: a request with Anthropic's thinking and top_k to an openai route is answered" 200 "$st"
expect_eq "chat: X-Toolgate-Dropped names the parameters left out (rule 75)" \
    "parameters thinking, top_k" "$(header_value "$B.h" X-Toolgate-Dropped)"
mock_last "$TG_TMP/last"
expect_eq "chat: neither went upstream" "[]" \
    "$("$PY" -c 'import json,sys; b=json.loads(json.load(open(sys.argv[1]))["body"]); print(json.dumps([k for k in ("thinking","top_k") if k in b]))' "$TG_TMP/last")"
expect_match "chat: the drop is logged" 'parameters its target refuses left out: \["thinking","top_k"\]' \
    "$(cat "$TG_LOG")"

# ---- Codex's own tool shapes come back in their shapes ---------------------

CODEX='{"model":"mock-parallel","stream":STREAM,"input":"go","tools":[{"type":"namespace","name":"multi_agent_v1","description":"agents","tools":[{"type":"function","name":"spawn_agent","description":"spawns","strict":false,"parameters":{"type":"object","properties":{"task":{"type":"string"}},"required":["task"]}}]},{"type":"custom","name":"apply_patch","description":"edits files","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}},{"type":"web_search","external_web_access":false}]}'
for stream in false true; do
    st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' -H 'X-Mock-Calls: 2' \
        --data-binary "$(printf '%s' "$CODEX" | sed "s/STREAM/$stream/")")
    got=$("$PY" - "$B" "$stream" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
if sys.argv[2] == "true":
    done = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: ")]
    out = [e for e in done if e.get("type") == "response.completed"][0]["response"]["output"]
else:
    out = json.loads(text)["output"]
def shape(i):
    if i["type"] == "function_call":
        return "function_call %s %s" % (i.get("namespace"), i["name"])
    if i["type"] == "custom_tool_call":
        return "custom_tool_call %s %s" % (i["name"], type(i["input"]).__name__)
    return i["type"]
print("; ".join(shape(i) for i in out))
EOF
)
    expect_eq "Codex over Responses (stream $stream): a namespaced call and a custom call in their own shapes" \
        "function_call multi_agent_v1 spawn_agent; custom_tool_call apply_patch str" "$got"
done

# ---- Codex with a model of its own catalog: tools in an additional_tools item --

LITE='{"model":"mock-parallel","stream":STREAM,"store":false,"input":[{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","description":"code mode","tools":[{"type":"custom","name":"exec","description":"runs JavaScript","format":{"type":"text"}}]},{"type":"function","name":"view_image","description":"shows an image","strict":false,"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}]}'
for stream in false true; do
    st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' -H 'X-Mock-Calls: 1' \
        --data-binary "$(printf '%s' "$LITE" | sed "s/STREAM/$stream/")")
    expect_eq "Codex additional_tools (stream $stream): answered" 200 "$st"
    expect_eq "Codex additional_tools (stream $stream): nothing dropped" "" "$(header_value "$B.h" X-Toolgate-Dropped)"
    mock_last "$TG_TMP/last"
    expect_eq "Codex additional_tools (stream $stream): its tools went upstream" '["functions__exec", "view_image"]' \
        "$("$PY" -c 'import json,sys; b=json.loads(json.load(open(sys.argv[1]))["body"]); print(json.dumps([t["function"]["name"] for t in b.get("tools", [])]))' "$TG_TMP/last")"
    got=$("$PY" - "$B" "$stream" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
if sys.argv[2] == "true":
    done = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: ")]
    out = [e for e in done if e.get("type") == "response.completed"][0]["response"]["output"]
else:
    out = json.loads(text)["output"]
print("; ".join("%s %s %s" % (i["type"], i.get("namespace"), i.get("name")) for i in out))
EOF
)
    expect_eq "Codex additional_tools (stream $stream): the exec call comes back as Codex reads it" \
        "custom_tool_call functions exec" "$got"
done

# ---- Codex's view_image: the image leaves the tool message ----------------------

VIEW='{"model":"mock-default","input":[{"type":"message","role":"user","content":"look"},{"type":"function_call","call_id":"c1","name":"view_image","arguments":"{\"path\":\"a.png\"}"},{"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}],"tools":[{"type":"function","name":"view_image","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]}'
st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' --data-binary "$VIEW")
expect_eq "view_image: answered" 200 "$st"
mock_last "$TG_TMP/last"
expect_eq "view_image: the tool message holds text, the image rides in the user message after it" \
    "tool str; user image_url" "$("$PY" - "$TG_TMP/last" <<'EOF'
import json, sys
b = json.loads(json.load(open(sys.argv[1]))["body"])
ms = b["messages"][-2:]
def kinds(m):
    c = m["content"]
    return "str" if isinstance(c, str) else ",".join(p["type"] for p in c if p["type"] != "text")
print("; ".join("%s %s" % (m["role"], kinds(m)) for m in ms))
EOF
)"

st=$(tg_req "$B" POST /so/v1/responses -H 'Content-Type: application/json' --data-binary "$VIEW")
expect_eq "view_image: a strict provider (text only in tool messages) answers" 200 "$st"
MSGIMG='{"model":"mock-default","max_tokens":20,"messages":[{"role":"user","content":"look"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"shot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}],"tools":[{"name":"shot","input_schema":{"type":"object"}}]}'
st=$(tg_req "$B" POST /so/v1/messages -H 'Content-Type: application/json' --data-binary "$MSGIMG")
expect_eq "a Messages tool_result image: a strict provider answers" 200 "$st"

# ---- what toolgate refuses itself is logged, with the route, model and stream --

st=$(tg_req "$B" POST /gem/v1/responses -H 'Content-Type: application/json' -H 'X-Request-Id: own-400-resp' \
    --data-binary '{"model":"mock-default","stream":true,"input":[{"type":"message","role":"bogus","content":"x"}]}')
expect_eq "a bridged request toolgate refuses is a 400" 400 "$st"
st=$(tg_req "$B" POST /v1/chat/completions -H 'Content-Type: application/json' -H 'X-Request-Id: own-400-chat' \
    --data-binary '{"model":"mock-default","stream":true,"messages":"x"}')
expect_eq "a chat request toolgate refuses is a 400" 400 "$st"
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' -H 'X-Request-Id: own-400-msg' \
    --data-binary '{"model":"mock-default","max_tokens":5,"stream":true,"messages":[{"role":"tool","content":"x"}]}')
expect_eq "a Messages request toolgate refuses is a 400" 400 "$st"
for id in own-400-resp own-400-chat own-400-msg; do
    # the lines are written once the answer has gone (on_completed): wait
    # for the access line, which comes after the warn line
    n=0
    while [ $n -lt 100 ] && ! grep -q "\"id\":\"$id\"" "$TG_LOG"; do sleep 0.05; n=$((n + 1)); done
    expect_eq "$id: one warn line, with the route, the model, the stream flag and the reason" 1 \
        "$(grep -c "toolgate warn: request $id: answered 400: POST .* route [a-z]* model mock-default stream true: ..*" "$TG_LOG")"
done
expect_eq "the access line carries the route the prefix picked, the model and the stream flag" \
    "gem mock-default True 400" "$("$PY" - "$TG_LOG" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{") and '"own-400-resp"' in l:
        a = json.loads(l)
        print(a["route"], a["model"], a["stream"], a["status"])
EOF
)"

# ---- GET /v1/models in each API's shape, on every prefix --------------------------

direct=$(curl -s "$MOCK_URL/v1/models")
st=$(tg_req "$B" GET /gem/v1/models)
expect_eq "GET /<prefix>/v1/models: the upstream's list, as it came" "200 $direct" "$st $(cat "$B")"
st=$(tg_req "$B" GET /gem/v1/models -H 'anthropic-version: 2023-06-01')
expect_eq "GET /<prefix>/v1/models with anthropic-version: the upstream's list in Anthropic's shape" \
    '200 {"data": [{"type": "model", "id": "mock-model", "display_name": "mock-model", "created_at": "1970-01-01T00:00:00Z"}], "has_more": false, "first_id": "mock-model", "last_id": "mock-model"}' \
    "$st $("$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$B")"
st=$(tg_req "$B" GET /anth/v1/models -H 'x-api-key: k')
expect_eq "GET /<prefix>/v1/models on a route that passes /v1/messages: the provider's own list" "200 $direct" "$st $(cat "$B")"
models_of() {  # FILE: "openai id,id" or "anthropic id,id"
    "$PY" -c '
import json, sys
v = json.load(open(sys.argv[1]))
if "object" in v:
    assert v["object"] == "list" and all(m["object"] == "model" and "created" in m and "owned_by" in m for m in v["data"]), v
    print("openai " + ",".join(m["id"] for m in v["data"]))
else:
    assert v["has_more"] is False and all(m["type"] == "model" and m["display_name"] and m["created_at"] for m in v["data"]), v
    print("anthropic %s %s %s" % (",".join(m["id"] for m in v["data"]), v["first_id"], v["last_id"]))' "$1"
}
st=$(tg_req "$B" GET /ali/v1/models)
expect_eq "GET /<prefix>/v1/models on a route with upstream_model: its own names, not the upstream's" "200 openai fast,quick" "$st $(models_of "$B")"
st=$(tg_req "$B" GET /ali/v1/models -H 'anthropic-version: 2023-06-01')
expect_eq "... in Anthropic's shape with anthropic-version" "200 anthropic fast,quick fast quick" "$st $(models_of "$B")"
st=$(tg_req "$B" GET /ali/v1/models/quick)
expect_eq "GET /<prefix>/v1/models/{id}: the model" "200 quick model" "$st $(json_get "$B" id) $(json_get "$B" object)"
st=$(tg_req "$B" GET /ali/v1/models/quick -H 'x-api-key: k')
expect_eq "GET /<prefix>/v1/models/{id} with x-api-key: Anthropic's model object" "200 quick model" "$st $(json_get "$B" id) $(json_get "$B" type)"
st=$(tg_req "$B" GET /ali/v1/models/nope)
expect_eq "GET /<prefix>/v1/models/{unknown}: 404 in OpenAI's shape" "404 model_not_found" "$st $(json_get "$B" error.code)"
st=$(tg_req "$B" GET /ali/v1/models/nope -H 'anthropic-version: 2023-06-01')
expect_eq "... and in Anthropic's with anthropic-version" "404 error not_found_error" "$st $(json_get "$B" type) $(json_get "$B" error.type)"
st=$(tg_req "$B" GET /lst/v1/models/lst-b)
expect_eq "GET /<prefix>/v1/models/{id} the upstream does not serve: the route's own model" "200 lst-b" "$st $(json_get "$B" id)"
# ---- Gemini's API: bridged, or passed to Gemini ----------------------------

GEM='{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{}}}]},{"googleSearch":{}}]}'
st=$(tg_req "$B" POST '/gem/v1beta/models/mock-default:generateContent' -H 'Content-Type: application/json' --data-binary "$GEM")
expect_eq "Gemini: generateContent on a gemini route is answered" 200 "$st"
expect_eq "Gemini: googleSearch is dropped and said" "tools googleSearch" "$(header_value "$B.h" X-Toolgate-Dropped)"
expect_eq "Gemini: the answer is a GenerateContentResponse" "STOP" "$(json_get "$B" candidates.0.finishReason)"
mock_last "$TG_TMP/last"
expect_eq "Gemini: the bridge asks the route's chat completions" "/v1/chat/completions" "$(json_get "$TG_TMP/last" path)"
st=$(tg_req "$B" POST '/gem/v1beta/models/mock-default:embedContent' -H 'Content-Type: application/json' --data-binary '{}')
expect_eq "Gemini: a method chat has not is a 404 in Gemini's shape" "404 NOT_FOUND" "$st $(json_get "$B" error.status)"

printf '{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}' >"$TG_TMP/whole.json"
st=$(tg_req "$B" POST '/gem/v1beta/models/mock-default:streamGenerateContent?alt=sse' -H 'Content-Type: application/json' \
    -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/whole.json" --data-binary "$GEM")
expect_match "Gemini: a whole chat answer to a streamed request is a stream one response long" \
    '^200 text/event-stream data: \{"candidates":\[\{"content":\{"role":"model","parts":\[\{"text":"whole"\}\]\}.*"finishReason":"STOP"' \
    "$st $(header_value "$B.h" Content-Type) $(cat "$B")"

printf 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"native"}]},"finishReason":"STOP"}]}\r\n\r\n' >"$TG_TMP/native.sse"
st=$(tg_req "$B" POST '/gpass/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse' -H 'Content-Type: application/json' \
    -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/native.sse" -H 'x-goog-api-key: client-key' --data-binary "$GEM")
expect_eq "gemini = pass: the stream is Gemini's own, relayed" "200 $(cat "$TG_TMP/native.sse")" "$st $(cat "$B")"
mock_last "$TG_TMP/last"
expect_eq "gemini = pass: to the native API's path, past the OpenAI endpoint's base" \
    "/v1beta/models/gemini-2.5-pro:streamGenerateContent" "$(json_get "$TG_TMP/last" path)"
expect_eq "gemini = pass: the route's key in x-goog-api-key" "route-key" "$(json_get "$TG_TMP/last" headers.x-goog-api-key)"
expect_eq "gemini = pass: the body as it came (googleSearch kept)" '{}' "$(json_get "$TG_TMP/last" body.tools.1.googleSearch)"
printf '{"totalTokens":7}' >"$TG_TMP/count.json"
st=$(tg_req "$B" POST '/gpass/v1beta/models/gemini-2.5-pro:countTokens' -H 'Content-Type: application/json' \
    -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/count.json" --data-binary "$GEM")
expect_eq "gemini = pass: countTokens is Gemini's count" "200 7" "$st $(json_get "$B" totalTokens)"
st=$(tg_req "$B" POST '/gem/v1beta/models/mock-default:countTokens' -H 'Content-Type: application/json' --data-binary "$GEM")
expect_match "Gemini bridged: countTokens is an estimate, said in X-Toolgate-Estimate" '^200 [0-9]+ countTokens' \
    "$st $(json_get "$B" totalTokens) $(header_value "$B.h" X-Toolgate-Estimate)"
# ---- Claude Code's flows through the Messages bridge --------------------------

# Read of a PDF: a tool_result holding a base64 document block
"$PY" - "$TG_ROOT/test/vectors/messages_api/M53-tool-result-pdf-as-text.json" >"$TG_TMP/pdfreq" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))["request"]
v["model"] = "mock-default"
print(json.dumps(v))
EOF
upstream_tool_text() {
    "$PY" -c 'import json,sys; b=json.loads(json.load(open(sys.argv[1]))["body"]); print(json.dumps([m for m in b["messages"] if m["role"] in ("tool","user")][1:]))' "$1"
}
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' --data-binary @"$TG_TMP/pdfreq")
expect_eq "Claude Code's PDF Read over a gemini route is answered (was a 400)" 200 "$st"
expect_eq "the PDF went as its text, said in X-Toolgate-Translated" "content document:pdf-text" \
    "$(header_value "$B.h" X-Toolgate-Translated)"
mock_last "$TG_TMP/last"
expect_match "the tool message upstream holds the PDF's text" 'Quarterly report: revenue rose 12 percent' \
    "$(upstream_tool_text "$TG_TMP/last")"
st=$(tg_req "$B" POST /oai/v1/messages -H 'Content-Type: application/json' --data-binary @"$TG_TMP/pdfreq")
expect_eq "the same over an openai route is answered" 200 "$st"
mock_last "$TG_TMP/last"
expect_match "there the PDF goes as a chat file part, in the user message after the tool message" \
    '"type": "file", "file": \{"filename": "document.pdf", "file_data": "data:application/pdf;base64,JVBER' \
    "$(upstream_tool_text "$TG_TMP/last")"
expect_eq "a file part is no translation: no X-Toolgate-Translated" "" "$(header_value "$B.h" X-Toolgate-Translated)"

# ToolSearch: tool_reference blocks load deferred tools
TS='{"model":"mock-default","max_tokens":50,"tools":[{"name":"ToolSearch","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}},{"name":"mcp__gh__create_issue","defer_loading":true,"input_schema":{"type":"object","properties":{}}},{"name":"mcp__gh__list_issues","defer_loading":true,"input_schema":{"type":"object","properties":{}}}],"messages":[{"role":"user","content":"file an issue"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"issue"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"mcp__gh__create_issue"}]}]}]}'
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' --data-binary "$TS")
expect_eq "a tool_result of tool_reference blocks is answered (was a 400)" 200 "$st"
mock_last "$TG_TMP/last"
expect_eq "the referenced tool joins the tools, the other deferred one waits" \
    '["ToolSearch", "mcp__gh__create_issue"]' \
    "$("$PY" -c 'import json,sys; b=json.loads(json.load(open(sys.argv[1]))["body"]); print(json.dumps([t["function"]["name"] for t in b["tools"]]))' "$TG_TMP/last")"

# on a discovery route the deferred tools are catalog entries from the first turn
TS1=$("$PY" -c 'import json,sys; v=json.loads(sys.argv[1]); v["messages"]=v["messages"][:1]; print(json.dumps(v))' "$TS")
st=$(tg_req "$B" POST /disc/v1/messages -H 'Content-Type: application/json' --data-binary "$TS1")
expect_eq "discovery route: deferred tools said as catalog entries" "200 tools defer_loading:catalog" \
    "$st $(header_value "$B.h" X-Toolgate-Translated)"
mock_last "$TG_TMP/last"
expect_eq "discovery route: the catalog search_tools ranks holds the deferred tools, not yet loaded" \
    "search_tools mcp__gh__create_issue mcp__gh__list_issues" \
    "$("$PY" -c '
import json,sys
b = json.loads(json.load(open(sys.argv[1]))["body"])
names = [t["function"]["name"] for t in b["tools"]]
desc = [t["function"].get("description", "") for t in b["tools"] if t["function"]["name"] == "search_tools"]
found = [n for n in ("mcp__gh__create_issue", "mcp__gh__list_issues") if desc and n in desc[0] and n not in names]
print(" ".join(["search_tools"] if "search_tools" in names else []) + " " + " ".join(found))' "$TG_TMP/last")"

# Claude Code names its deferred tools only in a system message: on a
# discovery route each joins the catalog (a stub), searchable at once
TS2=$("$PY" -c 'import json,sys; v=json.loads(sys.argv[1]); v["messages"].append({"role":"system","content":"The following deferred tools are now available via ToolSearch. Use ToolSearch with query \"select:<name>\" to load tool schemas before calling them:\nWebFetch\nmcp__notes__read_note\n\nAvailable agent types:"}); print(json.dumps(v))' "$TS1")
st=$(tg_req "$B" POST /disc/v1/messages -H 'Content-Type: application/json' --data-binary "$TS2")
expect_eq "discovery route: the tools only named said as catalog stubs" \
    "200 tools defer_loading:catalog, deferred:named" "$st $(header_value "$B.h" X-Toolgate-Translated)"
mock_last "$TG_TMP/last"
expect_eq "discovery route: search_tools' catalog holds the named tools" "WebFetch mcp__notes__read_note" \
    "$("$PY" -c '
import json,sys
b = json.loads(json.load(open(sys.argv[1]))["body"])
desc = [t["function"].get("description", "") for t in b["tools"] if t["function"]["name"] == "search_tools"]
print(" ".join(n for n in ("WebFetch", "mcp__notes__read_note") if desc and n in desc[0]))' "$TG_TMP/last")"
st=$(tg_req "$B" POST /disca/v1/messages -H 'Content-Type: application/json' --data-binary "$TS2")
mock_last "$TG_TMP/last"
expect_eq "discovery = auto under its threshold: no stubs, the tools go up as they are" \
    '200 ["ToolSearch", "mcp__gh__create_issue", "mcp__gh__list_issues"]' \
    "$st $("$PY" -c 'import json,sys; b=json.loads(json.load(open(sys.argv[1]))["body"]); print(json.dumps([t["function"]["name"] for t in b["tools"]]))' "$TG_TMP/last")"

# count_tokens: an estimate, said as such
st=$(tg_req "$B" POST /gem/v1/messages/count_tokens -H 'Content-Type: application/json' --data-binary @"$TG_TMP/pdfreq")
expect_eq "count_tokens on a bridged route is answered (was a 404)" 200 "$st"
expect_eq "with X-Toolgate-Estimate" "input_tokens" "$(header_value "$B.h" X-Toolgate-Estimate)"
expect_match "with input_tokens: a page image a PDF page, and the text" '^\{"input_tokens": ?3[0-9]{3}\}$' "$(cat "$B")"
# and Responses' input_tokens (openai 7.60's client.responses.inputTokens.count):
# 40 characters of instructions and input, an image, two items
IT='{"model":"mock-default","instructions":"Answer briefly.","input":[{"role":"user","content":[{"type":"input_text","text":"What is on this picture?"},{"type":"input_image","image_url":"https://example.com/a.png"}]}]}'
st=$(tg_req "$B" POST /gem/v1/responses/input_tokens -H 'Content-Type: application/json' --data-binary "$IT")
expect_eq "responses/input_tokens on a bridged route is answered (was the provider's 404)" \
    "200 input_tokens" "$st $(header_value "$B.h" X-Toolgate-Estimate)"
expect_match "in OpenAI's InputTokenCountResponse shape" \
    '^\{"object": ?"response.input_tokens", ?"input_tokens": ?11[0-9]{2}\}$' "$(cat "$B")"

# prompt caching: cache_control goes to an anthropic route only; elsewhere
# the header says it went, and it is no drop the metrics count
dropped_total() { tg_req "$B" GET /metrics >/dev/null; sed -n 's/^toolgate_bridge_dropped_total //p' "$B"; }
before=$(dropped_total)
CC='{"model":"mock-default","max_tokens":50,"system":[{"type":"text","text":"rules","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}'
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' --data-binary "$CC")
expect_eq "cache_control over a gemini route: answered, said as a hint" "200 hints cache_control" \
    "$st $(header_value "$B.h" X-Toolgate-Dropped)"

# one a kind and name said: 3 before the deferred-tool stubs, then
# defer_loading:catalog and deferred:named on /disc, defer_loading:catalog on /disca
tg_req "$B" GET /metrics >/dev/null
expect_match "the translations are counted (toolgate_bridge_translated_total)" \
    '^toolgate_bridge_translated_total 6$' "$(cat "$B")"
expect_eq "a hint is not counted as a drop" "$before" "$(dropped_total)"

# ---- hosted_tools = refuse ------------------------------------------------------

st=$(tg_req "$B" POST /strict/v1/responses -H 'Content-Type: application/json' --data-binary "$RESP")
expect_eq "hosted_tools = refuse: the Responses request is a 400" 400 "$st"
expect_eq "hosted_tools = refuse: naming the tool" "tools[1].type" "$(json_get "$B" error.param)"
st=$(tg_req "$B" POST /strict/v1/messages -H 'Content-Type: application/json' --data-binary "$MSG")
expect_eq "hosted_tools = refuse: the Messages request is a 400" 400 "$st"
st=$(tg_req "$B" POST '/strict/v1beta/models/mock-default:generateContent' -H 'Content-Type: application/json' --data-binary "$GEM")
expect_eq "hosted_tools = refuse: Gemini's googleSearch is a 400 in Gemini's shape" "400 INVALID_ARGUMENT" \
    "$st $(json_get "$B" error.status)"
expect_match "hosted_tools = refuse: naming the tool" 'tools\[1\]\.googleSearch' "$(json_get "$B" error.message)"

# ---- owners by provider key (memory store, no client_keys) -----------------------

check "provider keys alone keep Responses items and previous_response_id chains apart (memory)" \
    "$PY" "$TG_ROOT/test/integration/owners.py" "$TG_URL"

# ---- stored responses on a bridged route (memory store) --------------------------

check "GET/DELETE /v1/responses/{id}, input_items and cancel answered from the store (memory)" \
    "$PY" "$TG_ROOT/test/integration/stored.py" "$TG_URL" /gem

stop_toolgate
finish
