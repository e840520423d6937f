#!/bin/sh
# bridges.sh -- what the agent-API bridges do with what a chat upstream
# cannot carry, end to end: a base URL check (HEAD /prefix, Claude Code's),
# hosted tools left out and said so (X-Toolgate-Dropped, the log, the
# metrics) or refused on a route with hosted_tools = refuse; Claude Code's
# flows through the Messages bridge: a PDF it Read (a file part on an
# openai route, its text elsewhere, said in X-Toolgate-Translated), the
# tools its ToolSearch loaded, count_tokens answered with an estimate.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock

PORT=$(free_port)
CONF="$TG_TMP/bridges.conf"
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = info\nforward_headers = x-mock*\n\n' "$PORT"
    printf '[route gem]\nprefix = /gem\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\n\n' "$MOCK_PORT"
    printf '[route oai]\nprefix = /oai\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\n\n' "$MOCK_PORT"
    printf '[route disc]\nprefix = /disc\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\ndiscovery = on\n\n' "$MOCK_PORT"
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

# count_tokens: an estimate, said as such
st=$(tg_req "$B" POST /gem/v1/messages/count_tokens -H 'Content-Type: application/json' --data-binary @"$TG_TMP/pdfreq")
expect_eq "count_tokens on a bridged route is answered (was a 404)" 200 "$st"
expect_eq "with X-Toolgate-Estimate" "input_tokens" "$(header_value "$B.h" X-Toolgate-Estimate)"
expect_match "with input_tokens: a page image a PDF page, and the text" '^\{"input_tokens": ?3[0-9]{3}\}$' "$(cat "$B")"

# prompt caching: cache_control goes to an anthropic route only; elsewhere
# the header says it went, and it is no drop the metrics count
dropped_total() { tg_req "$B" GET /metrics >/dev/null; sed -n 's/^toolgate_bridge_dropped_total //p' "$B"; }
before=$(dropped_total)
CC='{"model":"mock-default","max_tokens":50,"system":[{"type":"text","text":"rules","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}'
st=$(tg_req "$B" POST /gem/v1/messages -H 'Content-Type: application/json' --data-binary "$CC")
expect_eq "cache_control over a gemini route: answered, said as a hint" "200 hints cache_control" \
    "$st $(header_value "$B.h" X-Toolgate-Dropped)"

tg_req "$B" GET /metrics >/dev/null
expect_match "the translations are counted (toolgate_bridge_translated_total)" \
    '^toolgate_bridge_translated_total 3$' "$(cat "$B")"
expect_eq "a hint is not counted as a drop" "$before" "$(dropped_total)"

# ---- hosted_tools = refuse ------------------------------------------------------

st=$(tg_req "$B" POST /strict/v1/responses -H 'Content-Type: application/json' --data-binary "$RESP")
expect_eq "hosted_tools = refuse: the Responses request is a 400" 400 "$st"
expect_eq "hosted_tools = refuse: naming the tool" "tools[1].type" "$(json_get "$B" error.param)"
st=$(tg_req "$B" POST /strict/v1/messages -H 'Content-Type: application/json' --data-binary "$MSG")
expect_eq "hosted_tools = refuse: the Messages request is a 400" 400 "$st"

stop_toolgate
finish
