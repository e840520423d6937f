#!/bin/sh
# hints.sh -- successor hints (issue 19 part 5) end to end against the
# mock's scripted discovery model:
#   - the agent sends back the result of a tool it found through discovery;
#     upstream, that tool message carries the schemas of the likely next
#     tools after the result, the tools array is the same bytes as on the
#     turn before, and the same history gives the same upstream bytes;
#   - the mock (X-Mock-Follow-Hint) calls the first hinted tool through
#     call_tool, the agent gets an ordinary call of it, and /metrics counts
#     the hint and that it was followed; whole, streamed, and through the
#     Messages bridge;
#   - discovery_hints = off sends the result as it came.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock

PORT=$(free_port)
CONF="$TG_TMP/hints.conf"
{
    conf_server "$PORT"
    printf '[route on]\nprefix = /on\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\ndiscovery = on\n\n' "$MOCK_PORT"
    printf '[route off]\nprefix = /off\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\ndiscovery = on\ndiscovery_hints = off\n\n' "$MOCK_PORT"
} >"$CONF"
start_toolgate "$CONF" || finish
B="$TG_TMP/body"
L="$TG_TMP/last"

# an issue tracker's tools and a chat's, behind the meta-tools; bodies in
# chat and Messages shapes. turn 1: the user asks; turn 2: the agent sends
# the result of gh__list_issues back.
"$PY" - "$TG_TMP" <<'EOF'
import json, sys
d = sys.argv[1]
def tool(n, desc, req, extra=()):
    props = {p: {"type": "integer" if p.endswith("number") else "string"} for p in list(req) + list(extra)}
    return {"type": "function", "function": {"name": n, "description": desc,
            "parameters": {"type": "object", "properties": props, "required": list(req)}}}
tools = [tool("gh__list_issues", "List the issues of a repository.", ["owner", "repo"]),
         tool("gh__get_issue", "Get one issue by its number.", ["owner", "repo", "issue_number"]),
         tool("gh__add_issue_comment", "Comment on an issue.", ["owner", "repo", "issue_number", "body"]),
         tool("gh__create_branch", "Create a branch.", ["owner", "repo", "branch"]),
         tool("chat__send_message", "Send a message to a channel.", ["channel", "text"]),
         tool("chat__list_channels", "List the channels.", []),
         tool("chat__read_history", "Read a channel's history.", ["channel"])]
user = {"role": "user", "content": "what is open in acme/web"}
call = {"id": "call_a1", "type": "function",
        "function": {"name": "gh__list_issues", "arguments": "{\"owner\":\"acme\",\"repo\":\"web\"}"}}
result = "[{\"number\":42,\"title\":\"login crash\",\"state\":\"open\"}]"
hist = [user, {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_a1", "content": result}]
for name, msgs, stream in [("turn1", [user], False), ("turn2", hist, False), ("turn2s", hist, True)]:
    json.dump({"model": "m", "stream": stream, "messages": msgs, "tools": tools}, open(f"{d}/{name}.json", "w"))
msg = {"model": "m", "max_tokens": 100, "tools": [{"name": t["function"]["name"],
       "description": t["function"]["description"], "input_schema": t["function"]["parameters"]} for t in tools],
       "messages": [user, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_a1",
           "name": "gh__list_issues", "input": {"owner": "acme", "repo": "web"}}]},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a1", "content": result}]}]}
json.dump(msg, open(f"{d}/turn2m.json", "w"))
EOF

post() {  # post OUT PATH BODYFILE [HEADERS...]
    _o=$1 _p=$2 _f=$3
    shift 3
    tg_req "$_o" POST "$_p" -H 'Content-Type: application/json' -H 'X-Mock: discovery' \
        -H 'X-Mock-Args: {"owner":"acme","repo":"web","issue_number":42}' "$@" --data-binary "@$_f"
}
# the tool message of the mock's last request, and its tools array
upstream_result() { mock_last "$L"; json_get "$L" body.messages.2.content; }
flat() { printf '%s' "$1" | tr '\n' ' '; }  # for grep, which reads lines
upstream_tools() { mock_last "$L"; json_get "$L" body.tools; }
metric() { tg_req "$TG_TMP/m" GET /metrics >/dev/null; sed -n "s/^$1 //p" "$TG_TMP/m"; }

# ---- turn 1, then turn 2 with the result --------------------------------

st=$(post "$B" /on/v1/chat/completions "$TG_TMP/turn1.json")
expect_eq "turn 1: answered" 200 "$st"
TOOLS1=$(upstream_tools)
expect_eq "turn 1: no hint yet" 0 "$(metric toolgate_discovery_hints_total)"

st=$(post "$B" /on/v1/chat/completions "$TG_TMP/turn2.json" -H 'X-Mock-Follow-Hint: 1')
expect_eq "turn 2: answered" 200 "$st"
R1=$(upstream_result)
expect_match "turn 2: upstream, the result comes first, as it was" '^\[\{"number":42,"title":"login crash","state":"open"\}\]' "$R1"
expect_match "turn 2: ... then the note with the next tools' schemas" \
    '<toolgate-next-tools>.*\[\{"name":"gh__get_issue","description":"Get one issue by its number.","parameters":\{' "$(flat "$R1")"
expect_match "turn 2: ... and its end" '</toolgate-next-tools>$' "$R1"
N=$(printf '%s' "$R1" | "$PY" -c '
import json, re, sys
t = sys.stdin.read()
names = [e["name"] for e in json.loads(re.search(r"\n(\[.*\])\n</toolgate-next-tools>", t, re.S).group(1))]
print(len(names), "list_issues" in " ".join(names), any(n.endswith(("search_tools", "get_tool_schema", "call_tool")) for n in names))')
expect_eq "turn 2: at most 3 tools, not the tool itself, no meta-tool" "3 False False" "$N"
expect_eq "turn 2: the tools array is turn 1's, byte for byte" "$TOOLS1" "$(upstream_tools)"
expect_eq "turn 2: the agent gets the hinted tool's call" gh__get_issue \
    "$(json_get "$B" choices.0.message.tool_calls.0.function.name)"
expect_eq "turn 2: ... with the model's arguments" '{"owner":"acme","repo":"web","issue_number":42}' \
    "$(json_get "$B" choices.0.message.tool_calls.0.function.arguments)"
expect_eq "hints counted" 1 "$(metric toolgate_discovery_hints_total)"
expect_eq "... and followed" 1 "$(metric toolgate_discovery_hints_followed_total)"

# the same history again: the same upstream bytes; a model that does not
# follow the hint is not counted as following it
post "$B" /on/v1/chat/completions "$TG_TMP/turn2.json" >/dev/null
expect_eq "the same history makes the same note" "$R1" "$(upstream_result)"
expect_eq "a hint not followed is counted as given" 2 "$(metric toolgate_discovery_hints_total)"
expect_eq "... not as followed" 1 "$(metric toolgate_discovery_hints_followed_total)"
expect_match "... the model read the note" 'done: .*toolgate-next-tools' "$(flat "$(json_get "$B" choices.0.message.content)")"

# ---- streamed, and through the Messages bridge ----------------------------

st=$(post "$B" /on/v1/chat/completions "$TG_TMP/turn2s.json" -H 'X-Mock-Follow-Hint: 1')
expect_eq "streamed: answered" 200 "$st"
expect_match "streamed: the agent gets the hinted tool's call" '"name":"gh__get_issue"' "$(cat "$B")"
expect_eq "streamed: the same note upstream" "$R1" "$(upstream_result)"
expect_eq "streamed: followed, counted" 2 "$(metric toolgate_discovery_hints_followed_total)"

st=$(post "$B" /on/v1/messages "$TG_TMP/turn2m.json" -H 'X-Mock-Follow-Hint: 1')
expect_eq "Messages bridge: answered" 200 "$st"
expect_eq "Messages bridge: the agent gets a tool_use of the hinted tool" gh__get_issue \
    "$(json_get "$B" content.0.name)"
expect_match "Messages bridge: the note rides in the tool message upstream" \
    'toolgate-next-tools.*gh__get_issue' "$(flat "$(upstream_result)")"
expect_eq "Messages bridge: followed, counted" 3 "$(metric toolgate_discovery_hints_followed_total)"

# ---- discovery_hints = off -------------------------------------------------

post "$B" /off/v1/chat/completions "$TG_TMP/turn2.json" -H 'X-Mock-Follow-Hint: 1' >/dev/null
expect_eq "hints off: the result goes up as it came" '[{"number":42,"title":"login crash","state":"open"}]' \
    "$(upstream_result)"
expect_eq "hints off: nothing counted" 4 "$(metric toolgate_discovery_hints_total)"

stop_toolgate
finish
