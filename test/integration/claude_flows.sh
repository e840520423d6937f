#!/bin/sh
# claude_flows.sh -- Claude Code's flows through the Messages bridge that
# its ordinary round trip (agents.sh) does not take: reading a PDF, and
# loading a deferred MCP tool with its ToolSearch tool.
#
# Claude Code (pinned in test/agents, as agents.sh runs it: default
# settings, ANTHROPIC_BASE_URL at a route's prefix, a dummy key) in front
# of the mock's strict validator for the route's provider; the prompt's
# MOCK_CALL directive makes the scripted model call the agent's own tool,
# and the model's final text quotes the tool's result ("MOCK_RESULT: ..."):
#
# - PDF: Read of a PDF comes back as a base64 document block inside the
#   tool_result; on routes whose provider takes no PDF (gemini, mistral)
#   the bridge gives the PDF's text (bridge/pdftext.h), so the quoted
#   result holds the token written in the PDF, and toolgate's log says the
#   translation; every request is answered 2xx (it was a 400 that ended
#   the session);
# - ToolSearch: with an MCP server's tools deferred (defer_loading),
#   ToolSearch answers with tool_reference blocks; the bridge says which
#   tools they loaded (the quoted result names the MCP tool) and sends
#   that tool with the next request (it was a 400, and Claude Code turned
#   tool search off); on a discovery route, where the loaded tool stays in
#   the catalog, the result carries its definition.
. "$(dirname "$0")/lib.sh"

DIR="$TG_ROOT/test/agents"
BIN="$DIR/node_modules/.bin"
TIMEOUT=60
agents_ready "$DIR"

start_mock -v
PORT=$(free_port)
CONF="$TG_TMP/claude_flows.conf"
{
    conf_server "$PORT" "log_level = info"
    for r in pdf-gemini:gemini:gemini pdf-mistral:mistral:mistral ts-gemini:gemini:gemini; do
        name=${r%%:*} rest=${r#*:}
        printf '[route %s]\nprefix = /%s\nupstream = http://127.0.0.1:%s/as/strict:%s/%s/v1\ndialect = %s\n\n' \
            "$name" "$name" "$MOCK_PORT" "${rest#*:}" "$name" "${rest%%:*}"
    done
    printf '[route ts-disc]\nprefix = /ts-disc\nupstream = http://127.0.0.1:%s/as/strict:gemini/ts-disc/v1\ndialect = gemini\ndiscovery = on\n\n' \
        "$MOCK_PORT"
} >"$CONF"
start_toolgate "$CONF" || finish

# claude RUN_DIR PREFIX MODEL PROMPT [ARGS...]: Claude Code headless, as
# agents.sh runs it (lib.sh's claude_run).
claude() {
    _d=$1 _p=$2
    shift 2
    mkdir -p "$_d/home" "$_d/work"
    (cd "$_d/work" && claude_run "$_d" "$TG_URL/$_p" "$@" </dev/null >"$_d/out" 2>"$_d/err")
    echo $? >"$_d/rc"
}

# refused PREFIX: the requests under /PREFIX/ toolgate answered other than 2xx.
refused() {
    "$PY" - "$TG_LOG" "/$1/" <<'EOF'
import json, sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if line.startswith("{"):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if (r.get("path") or "").startswith(sys.argv[2]) and not 200 <= r.get("status", 0) < 300:
            print(r.get("method"), r.get("path"), r.get("status"))
EOF
}

# write_pdf TEXT FILE: a one-page PDF showing TEXT.
write_pdf() {
    "$PY" - "$1" "$2" <<'EOF'
import sys
text, path = sys.argv[1], sys.argv[2]
stream = "BT /F1 12 Tf 72 720 Td (%s) Tj ET" % text
objs = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        "<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
out, offs = "%PDF-1.4\n", []
for i, o in enumerate(objs):
    offs.append(len(out))
    out += "%d 0 obj\n%s\nendobj\n" % (i + 1, o)
x = len(out)
out += "xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
out += "".join("%010d 00000 n \n" % o for o in offs)
out += "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, x)
open(path, "w").write(out)
EOF
}

diagnose() {
    echo "exit status $(cat "$1/rc")"
    tail -n 15 "$1/out" | cut -c1-400
    tail -n 10 "$1/err" | cut -c1-400
    grep -F "/$2/" "$TG_LOG" | cut -c1-400 | tail -n 8
}

V=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
    "$DIR/node_modules/@anthropic-ai/claude-code/package.json")

# ---- a PDF Read ------------------------------------------------------------
for r in pdf-gemini:gemini-2.5-flash pdf-mistral:mistral-large-latest; do
    route=${r%%:*} model=${r#*:}
    d="$TG_TMP/run/$route"
    mkdir -p "$d/work"
    token="tok-pdf-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
    write_pdf "The secret word is $token." "$d/work/note.pdf"
    claude "$d" "$route" "$model" "Read note.pdf and tell me the secret word. MOCK_CALL Read file_path=$d/work/note.pdf"
    if [ "$(cat "$d/rc")" = 0 ] && grep -q "MOCK_RESULT:.*$token" "$d/out" &&
        grep -q "bridge gave its chat upstream in another form: content document:pdf-text" "$TG_LOG"; then
        ok "Claude Code $V reads a PDF over route $route ($model): the model got its text"
    else
        not_ok "Claude Code $V reads a PDF over route $route ($model): the model got its text" "$(diagnose "$d" "$route")"
    fi
    expect_eq "Claude Code $V, PDF over $route: every request answered 2xx" "" "$(refused "$route")"
done

# ---- ToolSearch loads a deferred MCP tool ------------------------------------
d="$TG_TMP/run/ts-gemini"
mkdir -p "$d/work"
printf '%s' '[{"type":"function","function":{"name":"create_issue","description":"Create an issue in a repository","parameters":{"type":"object","properties":{"title":{"type":"string"}}}}},{"type":"function","function":{"name":"list_issues","description":"List the issues of a repository","parameters":{"type":"object","properties":{}}}}]' \
    >"$d/tools.json"
printf '{"mcpServers":{"gh":{"command":"node","args":["%s","%s","%s"]}}}' \
    "$DIR/mcp_catalog.mjs" "$d/tools.json" "$d/calls.log" >"$d/mcp.json"
claude "$d" ts-gemini gemini-2.5-flash \
    "Find the tool that creates issues. MOCK_CALL ToolSearch query=select:mcp__gh__create_issue" \
    --mcp-config "$d/mcp.json"
if [ "$(cat "$d/rc")" = 0 ] && grep -q "MOCK_RESULT:.*Tools loaded, now callable: mcp__gh__create_issue" "$d/out"; then
    ok "Claude Code $V ToolSearch over a gemini route: the tool_reference loaded the MCP tool"
else
    not_ok "Claude Code $V ToolSearch over a gemini route: the tool_reference loaded the MCP tool" \
        "$(diagnose "$d" ts-gemini)"
fi
expect_eq "Claude Code $V, ToolSearch: every request answered 2xx" "" "$(refused ts-gemini)"

# ---- the same on a discovery route: the definition reaches the model ------
# ToolSearch is a catalog tool there, called through call_tool, and the
# loaded tool stays in the catalog: its definition must be in the result.
d="$TG_TMP/run/ts-disc"
mkdir -p "$d/work"
cp "$TG_TMP/run/ts-gemini/tools.json" "$d/tools.json"
printf '{"mcpServers":{"gh":{"command":"node","args":["%s","%s","%s"]}}}' \
    "$DIR/mcp_catalog.mjs" "$d/tools.json" "$d/calls.log" >"$d/mcp.json"
claude "$d" ts-disc gemini-2.5-flash \
    "Load the tool that creates issues. MOCK_CALL ToolSearch query=select:mcp__gh__create_issue" \
    --mcp-config "$d/mcp.json"
if [ "$(cat "$d/rc")" = 0 ] &&
    grep -q 'MOCK_RESULT:.*mcp__gh__create_issue .*<function>{"description":"Create an issue in a repository","name":"mcp__gh__create_issue","parameters":' "$d/out"; then
    ok "Claude Code $V ToolSearch over a discovery route: the model got the loaded tool's definition"
else
    not_ok "Claude Code $V ToolSearch over a discovery route: the model got the loaded tool's definition" \
        "$(diagnose "$d" ts-disc)"
fi
expect_eq "Claude Code $V, ToolSearch over discovery: every request answered 2xx" "" "$(refused ts-disc)"

stop_toolgate
finish
