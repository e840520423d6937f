#!/bin/sh
# agent_catalog.sh -- a real agent with a large MCP catalog, through
# toolgate's discovery (issue 19 part 6, issue 31): how many tasks end with
# the right tool called.
#
# The agent (pinned in test/agents, as agents.sh runs it: opencode, or
# Claude Code with TG_CATALOG_AGENT=claude) gets a local stdio MCP server
# (test/agents/mcp_catalog.mjs) that serves the 400 tools of
# corpus/requests/big-400.json, with a query's target tool in place of the
# last one (as discovery_eval does), and the query as its prompt. toolgate
# (discovery on) collapses the agent's tools behind the meta-tools; the
# mock's scripted model (scenario discovery-fill) searches with the prompt
# and calls the first result through call_tool with a value for each
# required parameter, at once when the result carries its parameters
# (discovery_schemas, 3 by default), else after reading its schema with
# get_tool_schema; the agent runs the MCP tool, which
# logs the call. Counted: the runs whose MCP server saw a call of the
# target, and the upstream requests each task took (each query has its own
# route, /qN, so toolgate's access log says which requests were its: one
# per request of the agent that carried the catalog, plus its inner rounds;
# opencode's title requests, without tools, are left out).
#
# Claude Code defers MCP tools: it sends their names only (a system turn),
# which the Messages bridge makes catalog stubs of (messages_deferred.c),
# so there search_tools matches the tools' names alone, no descriptions;
# the stubs declare no parameters, so the call carries none.
# TG_CATALOG_AGENT=claude_all runs it with ENABLE_TOOL_SEARCH=false, its
# switch that sends every MCP tool's definition in tools instead;
# claude_search keeps them deferred and has the scripted model search with
# Claude Code's own ToolSearch (scenario discovery-toolsearch, which sees
# the descriptions), then call the first tool it loaded through call_tool.
#
# TG_AGENT_QUERIES queries of the test half of test/discovery/queries.json
# (every k-th one, default 6); `make eval` runs this with 30 for each agent.
# TG_AGENT_LOG sets toolgate's log_level; TG_AGENT_KEEP=DIR keeps the runs.
. "$(dirname "$0")/lib.sh"

DIR="$TG_ROOT/test/agents"
BIN="$DIR/node_modules/.bin"
AGENT=${TG_CATALOG_AGENT:-opencode}
SCENARIO=discovery-fill
[ "$AGENT" = claude_search ] && SCENARIO=discovery-toolsearch
N=${TG_AGENT_QUERIES:-6}
TIMEOUT=${TG_AGENT_TIMEOUT:-150}  # a run takes 20-40 s; at load 12-20, 60 s timed out a third

agents_ready "$DIR"
TG_SHARED=${TG_SHARED:-$TG_ROOT/../shared}
[ -f "$TG_SHARED/corpus/requests/big-400.json" ] ||
    { not_ok "the shared corpus is there" "$TG_SHARED/corpus/requests/big-400.json missing"; finish; }

start_mock -v
PORT=$(free_port)
CONF="$TG_TMP/catalog.conf"
# the agent's own tools stay in view (core): every tool but the MCP
# server's, which opencode names mcp_<tool>; one route per query (/qN)
{
    conf_server "$PORT" "log_level = ${TG_AGENT_LOG:-info}"
    q=0
    while [ $q -lt "$N" ]; do
        printf '[route q%s]\nprefix = /q%s\nupstream = http://127.0.0.1:%s/as/%s/v1\ndialect = openai\ndiscovery = on\n' "$q" "$q" "$MOCK_PORT" "$SCENARIO"
        printf 'discovery_core = [!m]*, m[!c]*, mc[!p]*, mcp[!_]*\n\n'
        q=$((q + 1))
    done
} >"$CONF"
start_toolgate "$CONF" || finish

# one directory per query: its catalog (tools.json), its prompt and the
# MCP tool name it wants (want)
"$PY" - "$TG_ROOT/test/discovery/queries.json" "$TG_SHARED" "$N" "$TG_TMP/q" <<'EOF'
import json, os, sys
queries, shared, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
test = [q for q in json.load(open(queries)) if q["half"] == "test"]
pick = test[:: max(1, len(test) // n)][:n]
base = json.load(open(f"{shared}/corpus/requests/big-400.json"))["tools"]
for i, q in enumerate(pick):
    tools = json.load(open(f"{shared}/corpus/tools/{q['server']}.json"))
    tools = tools if isinstance(tools, list) else tools.get("tools", tools)
    tool = next(t for t in tools if t["function"]["name"] == q["tool"])
    cat = list(base)
    same = [k for k, t in enumerate(cat) if t["function"]["name"] == tool["function"]["name"]
            and t["function"].get("description") == tool["function"].get("description")]
    if same:
        want = tool["function"]["name"]
    else:
        t = json.loads(json.dumps(tool))
        if any(x["function"]["name"] == t["function"]["name"] for x in cat[:-1]):
            t["function"]["name"] = f"{q['server']}__{t['function']['name']}"
        want = t["function"]["name"]
        cat[-1] = t
    d = f"{out}/{i}"
    os.makedirs(f"{d}/work")
    os.makedirs(f"{d}/home")
    json.dump(cat, open(f"{d}/tools.json", "w"))
    open(f"{d}/prompt", "w").write(q["query"])
    open(f"{d}/want", "w").write(want)
EOF

# run_opencode DIR: opencode with the catalog's MCP server, headless
run_opencode() {
    (cd "$1/work" && opencode_run "$1" "$TG_URL/q$(basename "$1")" gpt-4.1 "$(cat "$1/prompt")" \
        "\"mcp\": { \"mcp\": { \"type\": \"local\", \"enabled\": true,
    \"command\": [\"node\", \"$DIR/mcp_catalog.mjs\", \"$1/tools.json\", \"$1/calls.log\"] } }" \
        </dev/null >"$1/out" 2>"$1/err"
     echo $? >"$1/rc")
}

run_claude_all() { CLAUDE_ENV=ENABLE_TOOL_SEARCH=false run_claude "$@"; }
run_claude_search() { run_claude "$@"; }

# run_claude DIR: Claude Code with the catalog's MCP server (--mcp-config),
# headless, every tool of that server allowed; it names the tools
# mcp__catalog__<tool> and defers them (names only, in a system message),
# which the Messages bridge makes catalog stubs of.
run_claude() {
    printf '{"mcpServers":{"catalog":{"command":"node","args":["%s","%s","%s"]}}}\n' \
        "$DIR/mcp_catalog.mjs" "$1/tools.json" "$1/calls.log" >"$1/mcp.json"
    (cd "$1/work" && claude_run "$1" "$TG_URL/q$(basename "$1")" gpt-4.1 "$(cat "$1/prompt")" \
        --mcp-config "$1/mcp.json" --allowedTools mcp__catalog \
        </dev/null >"$1/out" 2>"$1/err"
     echo $? >"$1/rc")
}

# two at a time: each is a node process of a few hundred MB (wait names
# them: a bare wait would wait for the mock and toolgate too)
i=0
while [ -d "$TG_TMP/q/$i" ]; do
    "run_$AGENT" "$TG_TMP/q/$i" &
    pids=$!
    j=$((i + 1))
    if [ -d "$TG_TMP/q/$j" ]; then
        "run_$AGENT" "$TG_TMP/q/$j" &
        pids="$pids $!"
    fi
    wait $pids
    i=$((i + 2))
done

ran=0 right=0 called=0
i=0
while [ -d "$TG_TMP/q/$i" ]; do
    d="$TG_TMP/q/$i"
    [ "$(cat "$d/rc" 2>/dev/null)" = 0 ] && ran=$((ran + 1))
    if [ -s "$d/calls.log" ]; then
        called=$((called + 1))
        "$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["name"])' \
            "$d/calls.log" | grep -qx "$(cat "$d/want")" && right=$((right + 1))
    fi
    i=$((i + 1))
done
# upstream requests of each task: its route's access-log lines that carried
# tools (the agent's turns), each 1 + its inner discovery rounds
ups=$("$PY" - "$TG_LOG" "$i" <<'EOF'
import json, sys
n = int(sys.argv[2])
per = [0] * n
for line in open(sys.argv[1], errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    r = e.get("route") or ""
    if r.startswith("q") and r[1:].isdigit() and int(r[1:]) < n and e.get("tools_in", 0) > 0:
        per[int(r[1:])] += 1 + e.get("discovery_rounds", 0)
print("%.2f (%s)" % (sum(per) / max(n, 1), " ".join(map(str, per))))
EOF
)
case $AGENT in
claude) label="claude $(json_get "$DIR/node_modules/@anthropic-ai/claude-code/package.json" version) (deferred MCP tools: names only)" ;;
claude_all) label="claude $(json_get "$DIR/node_modules/@anthropic-ai/claude-code/package.json" version) (ENABLE_TOOL_SEARCH=false: every definition sent)" ;;
claude_search) label="claude $(json_get "$DIR/node_modules/@anthropic-ai/claude-code/package.json" version) (deferred MCP tools, the model searches with ToolSearch)" ;;
*) label="opencode $(json_get "$DIR/node_modules/opencode-ai/package.json" version)" ;;
esac
echo "# $label, 400 MCP tools, discovery on: $right of $i queries ended with the right tool called ($called called a catalog tool, $ran ran to the end); upstream requests per task: $ups"
# claude_search: how often ToolSearch's answer (its tool_reference blocks,
# in the session Claude Code keeps under HOME) held the target at all
if [ "$AGENT" = claude_search ]; then
    "$PY" - "$TG_TMP/q" "$i" <<'EOF'
import glob, json, sys
top1 = top5 = 0
for k in range(int(sys.argv[2])):
    d = f"{sys.argv[1]}/{k}"
    want = "mcp__catalog__" + open(f"{d}/want").read()
    refs = []
    for f in glob.glob(f"{d}/home/.claude/projects/*/*.jsonl"):
        for line in open(f, errors="replace"):
            try:
                c = (json.loads(line).get("message") or {}).get("content")
            except ValueError:
                continue
            for b in c if isinstance(c, list) else []:
                if b.get("type") == "tool_result" and isinstance(b.get("content"), list) and not refs:
                    refs = [x.get("tool_name") for x in b["content"] if x.get("type") == "tool_reference"]
    top1 += refs[:1] == [want]
    top5 += want in refs[:5]
print(f"# ToolSearch's answer: the target first in {top1}, among its first five in {top5} of {sys.argv[2]}")
EOF
fi
expect_eq "$AGENT ran every query to the end" "$i" "$ran"
expect_eq "every run called a catalog tool through discovery" "$i" "$called"
if [ "$right" -gt 0 ]; then
    ok "the right tool was called in at least one run"
else
    not_ok "the right tool was called in at least one run" \
        "$(for d in "$TG_TMP"/q/*; do echo "$(cat "$d/want"): $(cat "$d/calls.log" 2>/dev/null)"; tail -n 5 "$d/err"; done)"
fi
if [ "$AGENT" = claude_search ]; then
    # no inner round: the model searched with the agent's ToolSearch
    if grep -q 'content tool_reference' "$TG_LOG"; then
        ok "ToolSearch's results reached the model"
    else
        not_ok "ToolSearch's results reached the model" "$(tail -n 20 "$TG_LOG")"
    fi
elif grep -q '"discovery_rounds":[1-9]' "$TG_LOG"; then
    ok "toolgate answered the discovery rounds (search, schema) itself"
else
    not_ok "toolgate answered the discovery rounds (search, schema) itself" "$(tail -n 20 "$TG_LOG")"
fi

stop_toolgate
# TG_AGENT_KEEP=DIR keeps the runs and the logs there, to look into
if [ -n "$TG_AGENT_KEEP" ]; then
    mkdir -p "$TG_AGENT_KEEP" && cp -r "$TG_TMP/q" "$TG_TMP/mock.err" "$TG_LOG" "$TG_AGENT_KEEP"
    curl -s "http://127.0.0.1:$MOCK_PORT/_last" >"$TG_AGENT_KEEP/last.json"
fi
finish
