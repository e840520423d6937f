#!/bin/sh
# bridges.sh -- what the agent-API bridges do with what a chat upstream
# cannot carry, end to end: a base URL check (HEAD /prefix, Claude Code's),
# hosted tools left out and said so (X-Toolgate-Dropped, the log, the
# metrics) or refused on a route with hosted_tools = refuse.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock

PORT=$(free_port)
CONF="$TG_TMP/bridges.conf"
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = info\nforward_headers = x-mock*\n\n' "$PORT"
    printf '[route gem]\nprefix = /gem\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\n\n' "$MOCK_PORT"
    printf '[route strict]\nprefix = /strict\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nhosted_tools = refuse\n\n' "$MOCK_PORT"
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
expect_eq "a request with nothing to drop has no X-Toolgate-Dropped" "" "$(header_value "$B.h" X-Toolgate-Dropped)"

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

# ---- hosted_tools = refuse ------------------------------------------------------

st=$(tg_req "$B" POST /strict/v1/responses -H 'Content-Type: application/json' --data-binary "$RESP")
expect_eq "hosted_tools = refuse: the Responses request is a 400" 400 "$st"
expect_eq "hosted_tools = refuse: naming the tool" "tools[1].type" "$(json_get "$B" error.param)"
st=$(tg_req "$B" POST /strict/v1/messages -H 'Content-Type: application/json' --data-binary "$MSG")
expect_eq "hosted_tools = refuse: the Messages request is a 400" 400 "$st"

stop_toolgate
finish
