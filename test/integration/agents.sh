#!/bin/sh
# agents.sh -- real coding-agent CLIs, headless, through toolgate.
#
# Claude Code and pi (Anthropic's Messages API), Codex and pi (OpenAI's
# Responses API), opencode, Qwen Code, pi, Continue cn, Kilo and grok-cli
# (chat completions), Gemini CLI (Google's Gemini API), pinned in
# test/agents's package lock and installed with npm ci when the lock
# changed, each run with its default settings: only the base URL, a dummy
# key and the model are set, plus the documented switches that keep it off
# the network (telemetry, update checks, model catalogues). HOME is a fresh
# directory per run, so no login or earlier state is read.
#
# Each agent gets a task whose prompt carries the mock's directive
# ("MOCK_CALL <tool> key=value", test/mock/mock_upstream.c): the scripted
# model calls the agent's own tool to read a file that holds a token (or,
# Codex, to list a directory that holds a file of that name), the agent
# runs it and sends the result back, and the model's final text quotes
# that result, which the agent prints. The token in the agent's output
# proves the round trip. The first five agents run on one route per dialect
# (gemini with a 2.5 and a 3 model, anthropic, mistral, openai-strict, groq,
# deepseek) and on two with discovery on (Gemini 2.5 and 3), each route in
# front of the mock's strict validator for that provider, so a request the
# provider would refuse fails here too; the others, and the flows (a PDF,
# an image, ToolSearch loading an MCP tool, a sub-agent, a second turn,
# Codex's default model, view_image, apply_patch, Codex reasoning over two
# turns, opencode's two-step chain: "flows" below), run as
# the suite agents_new.sh, each on one of two routes, and on all nine in
# `make test-agents` (TG_AGENT_MATRIX=full). Every agent streams, and none of them has a setting for
# non-streamed requests; Claude Code falls back to them when a stream
# breaks, which claude_whole provokes to test the whole answers.
#
# A second check per run: every request the agent made (side requests
# included: titles, quota checks, token counts, model lists) got a 2xx.
#
# Known breaks waiting for their fix are TAP "# TODO" lines (todo_reason
# below), which test/run.sh counts neither way. A failure prints what the
# agent printed and what toolgate and the mock logged for its route.
#
# TG_AGENTS / TG_AGENT_ROUTES limit the runs (space-separated names);
# TG_AGENT_LOG sets toolgate's log_level (default info); TG_AGENT_JOBS the
# agents run at once (8); TG_AGENT_TIMEOUT the seconds one may take (120);
# TG_AGENT_KEEP=DIR keeps the runs, the logs and the mock's last request.
. "$(dirname "$0")/lib.sh"

DIR="$TG_ROOT/test/agents"
BIN="$DIR/node_modules/.bin"
# Two sets, two suites (each within test/run.sh's time per suite): the
# first five agents on every route, and (agents_new.sh, TG_AGENT_SET=new)
# the agents and flows added in issue 26, each on one route (half on
# gemini3, half on strict) unless TG_AGENT_MATRIX=full (make test-agents) or
# TG_AGENT_ROUTES names the routes; at most JOBS agents run at once.
if [ "$TG_AGENT_SET" = new ]; then
    AGENTS=${TG_AGENTS:-gemini pi pi_responses pi_messages cn kilo grok claude_pdf claude_image \
claude_mcp claude_task claude_cont codex_default codex_image codex_patch codex_resume codex_reason opencode_chain}
elif [ "$TG_AGENT_SET" = flows ]; then
    # the flows of agents_flows.sh (issue of 2026-12-06), the same way
    AGENTS=${TG_AGENTS:-claude_websearch claude_compact claude_think claude_schema codex_freeform codex_schema opencode_image \
opencode_pdf opencode_task opencode_think gemini_image gemini_cont gemini_compress gemini_websearch gemini_think pi_image pi_think \
qwen_think}
else
    AGENTS=${TG_AGENTS:-claude claude_whole codex opencode qwen}
fi
ROUTES=${TG_AGENT_ROUTES:-gemini25 gemini3 anthropic mistral strict groq deepseek disc25 disc}
JOBS=${TG_AGENT_JOBS:-8}

# runs_on AGENT ROUTE: whether this suite runs AGENT on ROUTE.
runs_on() {
    # Gemini CLI 0.61.0 leaves a gemini-3 model's functionResponse.parts
    # out of its request (stripToolCallIdPrefixes rebuilds the part without
    # them): the image cannot reach toolgate on a Gemini 3 route.
    case "$1 $2" in "gemini_image gemini3" | "gemini_image disc") return 1 ;; esac
    # codex_schema names a tool that is nowhere: behind discovery the
    # mock's model searches for it instead of answering JSON
    case "$1 $2" in "codex_schema disc"*) return 1 ;; esac
    [ -n "$TG_AGENT_ROUTES" ] || [ "$TG_AGENT_MATRIX" = full ] && return 0
    [ "$TG_AGENT_SET" = new ] || [ "$TG_AGENT_SET" = flows ] || return 0
    case "$1 $2" in
    "gemini gemini3" | "pi_messages gemini3" | "cn gemini3" | "grok gemini3" | \
        "claude_pdf gemini3" | "claude_task gemini3" | "codex_default gemini3" | \
        "codex_patch gemini3" | "claude_websearch gemini3" | "codex_freeform gemini3" | "codex_schema gemini3" | \
        "opencode_task gemini3" | "gemini_cont gemini3" | "gemini_compress gemini3" | "pi_think gemini3" | \
        "gemini_think gemini3") return 0 ;;
    "pi strict" | "pi_responses strict" | "kilo strict" | "claude_image strict" | \
        "claude_mcp strict" | "claude_cont strict" | "codex_image strict" | \
        "codex_resume strict" | "claude_compact strict" | "opencode_image strict" | \
        "gemini_image strict" | "gemini_websearch strict" | "pi_image strict" | "opencode_think strict" | "claude_schema strict" | \
        "qwen_think strict") return 0 ;;
    # DeepSeek wants the reasoning of a call's turn back (rule 90's route)
    "claude_think deepseek") return 0 ;;
    # a PDF to a model that reads text only: its text (rule 99)
    "opencode_pdf deepseek") return 0 ;;
    # discovery: Claude Code's deferred MCP tools in the catalog, and a
    # second turn on Gemini 3 (the signature of a call Claude Code replays
    # without it, issue 31)
    "claude_mcp disc" | "claude_cont disc") return 0 ;;
    # a reasoning model on a Gemini route, twice in one session
    "codex_reason disc") return 0 ;;
    "opencode_chain mistral") return 0 ;;
    esac
    return 1
}
TIMEOUT=${TG_AGENT_TIMEOUT:-120}

agents_ready "$DIR"

version() {
    "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
        "$DIR/node_modules/$1/package.json"
}

# route_info ROUTE: the route's dialect, the model the agent asks for, the
# mock's scenario (strict:<provider> checks what that provider checks) and
# extra conf lines.
route_info() {
    R_EXTRA=
    case $1 in
    gemini25) R_DIALECT=gemini R_MODEL=gemini-2.5-flash R_MOCK=strict:gemini ;;
    gemini3) R_DIALECT=gemini R_MODEL=gemini-3-flash-preview R_MOCK=strict:gemini ;;
    anthropic) R_DIALECT=anthropic R_MODEL=claude-sonnet-4-5 R_MOCK=strict:anthropic
        # Anthropic's own /v1/messages is passed through by default; the
        # mock speaks chat completions only, as Anthropic's compat endpoint.
        R_EXTRA='messages = bridge' ;;
    mistral) R_DIALECT=mistral R_MODEL=mistral-large-latest R_MOCK=strict:mistral ;;
    strict) R_DIALECT=openai-strict R_MODEL=gpt-4.1 R_MOCK=strict:openai ;;
    groq) R_DIALECT=groq R_MODEL=llama-3.3-70b-versatile R_MOCK=strict:groq ;;
    deepseek) R_DIALECT=deepseek R_MODEL=deepseek-chat R_MOCK=default ;;
    disc25) R_DIALECT=gemini R_MODEL=gemini-2.5-flash R_MOCK=strict:gemini
        R_EXTRA='discovery = on' ;;
    disc) R_DIALECT=gemini R_MODEL=gemini-3-flash-preview R_MOCK=strict:gemini
        R_EXTRA='discovery = on' ;;
    esac
}

# todo_reason AGENT ROUTE CHECK: the known break that makes this check
# (trip: the tool's round trip; 2xx: every request answered) fail until
# its fix is merged, a "case" line per break; empty when it must pass.
# The open ones are those of issue 26 whose fixes other branches bring.
todo_reason() {
    case "$1 $2 $3" in
    esac
}

start_mock -v
PORT=$(free_port)
CONF="$TG_TMP/agents.conf"
{
    conf_server "$PORT" "log_level = ${TG_AGENT_LOG:-info}"
    # One route per agent and route, so that each run's requests can be
    # told apart in toolgate's and the mock's logs.
    for a in $AGENTS; do
        for r in $ROUTES; do
            runs_on "$a" "$r" || continue
            route_info "$r"
            printf '[route %s-%s]\nprefix = /%s-%s\nupstream = http://127.0.0.1:%s/as/%s/%s-%s/v1\ndialect = %s\n%s\n\n' \
                "$a" "$r" "$a" "$r" "$MOCK_PORT" "$R_MOCK" "$a" "$r" "$R_DIALECT" "$R_EXTRA"
        done
    done
} >"$CONF"
start_toolgate "$CONF" || finish

# ---- one run per agent ------------------------------------------------------
# run_AGENT RUN_DIR BASE_URL MODEL PROMPT: writes the agent's config under
# RUN_DIR/home or RUN_DIR/work and runs it headless in a clean environment;
# tool_AGENT FILE: the directive that makes the model read FILE with the
# agent's own tool.

# Claude Code: claude_run (lib.sh).
run_claude() { claude_run "$@"; }
tool_claude() { echo "Read file_path=$1"; }

# Claude Code, whole: it sends a request again unstreamed when its stream
# ends unfinished, which the mock does to every streamed answer here
# (MOCK_CUT_STREAMS), so the round trip goes through the bridge's
# non-streamed path; no setting makes it ask unstreamed at first.
run_claude_whole() { run_claude "$@"; }
tool_claude_whole() { echo "Read file_path=$1 MOCK_CUT_STREAMS"; }

# Codex: a model provider whose base_url is the route's /v1 (Codex appends
# /responses; wire_api "responses" is its only and default wire API).
run_codex() {
    codex_config "$1" "$2" "$3"
    codex_exec "$1" "$4"
}
# codex_config RUN_DIR BASE_URL MODEL [LINES]: no model line when MODEL
# is empty; LINES are more top-level settings.
codex_config() {
    mkdir -p "$1/home/.codex"
    {
        [ -n "$3" ] && echo "model = \"$3\""
        [ -n "$4" ] && printf '%s\n' "$4"
        cat <<EOF
model_provider = "toolgate"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.toolgate]
name = "toolgate"
base_url = "$2/v1"
env_key = "TOOLGATE_API_KEY"
EOF
    } >"$1/home/.codex/config.toml"
}
# codex_exec RUN_DIR ARGS...: codex exec with the run's HOME.
codex_exec() {
    _home=$1/home
    shift
    env -i PATH="$PATH" HOME="$_home" TOOLGATE_API_KEY=dummy \
        timeout "$TIMEOUT" "$BIN/codex" exec --skip-git-repo-check "$@"
}
# Codex lists a directory (its shell tool, in its read-only sandbox) where
# the others read a file: the token is the name of the file in it.
tool_codex() { echo "exec_command cmd='ls $(dirname "$1")/box'"; }

# opencode: opencode_run (lib.sh).
run_opencode() { opencode_run "$@"; }
tool_opencode() { echo "read filePath=$1"; }

# Qwen Code: its OpenAI auth from OPENAI_BASE_URL / OPENAI_API_KEY /
# OPENAI_MODEL; usage statistics and telemetry off in ~/.qwen/settings.json.
run_qwen() {
    mkdir -p "$1/home/.qwen"
    printf '%s\n' '{"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"enableAutoUpdate":false}}' \
        >"$1/home/.qwen/settings.json"
    env -i PATH="$PATH" HOME="$1/home" \
        OPENAI_BASE_URL="$2/v1" OPENAI_API_KEY=dummy OPENAI_MODEL="$3" \
        timeout "$TIMEOUT" "$BIN/qwen" -p "$4"
}
tool_qwen() { echo "read_file file_path=$1"; }

# Gemini CLI: Google's own API (POST {base}/v1beta/models/MODEL:
# streamGenerateContent?alt=sse) at GOOGLE_GEMINI_BASE_URL, the route's
# prefix; an API key (GEMINI_API_KEY) as auth, picked in settings.json
# with usage statistics, telemetry and auto-update off. -p: headless; the
# read_file tool needs no approval.
run_gemini() {
    mkdir -p "$1/home/.gemini"
    printf '%s%s}\n' '{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false}' \
        "${GEMINI_SETTINGS:+,$GEMINI_SETTINGS}" >"$1/home/.gemini/settings.json"
    env -i PATH="$PATH" HOME="$1/home" GEMINI_CLI_NO_RELAUNCH=true GEMINI_CLI_TRUST_WORKSPACE=true \
        GOOGLE_GEMINI_BASE_URL="$2" GEMINI_API_KEY=dummy \
        timeout "$TIMEOUT" "$BIN/gemini" -m "$3" -p "$4" ${5:+"$5"} ${6:+"$6"}
}
tool_gemini() { echo "read_file file_path=$1"; }

# pi: a provider in ~/.pi/agent/models.json for each of the three APIs it
# speaks (api: openai-completions, openai-responses, anthropic-messages;
# the Anthropic SDK appends /v1/messages to the prefix); PI_OFFLINE turns
# its update checks and install telemetry off. -p prints the final text.
pi_run() {
    mkdir -p "$1/home/.pi/agent"
    _pin=
    [ -n "$PI_INPUT" ] && _pin=", \"input\": $PI_INPUT"
    cat >"$1/home/.pi/agent/models.json" <<EOF
{ "providers": { "toolgate": { "baseUrl": "$2", "api": "$5", "apiKey": "dummy",
  "models": [ { "id": "$3"$_pin } ] } } }
EOF
    env -i PATH="$PATH" HOME="$1/home" PI_OFFLINE=1 \
        timeout "$TIMEOUT" "$BIN/pi" --provider toolgate --model "$3" -p "$4"
}
run_pi() { pi_run "$1" "$2/v1" "$3" "$4" openai-completions; }
tool_pi() { echo "read path=$1"; }
run_pi_responses() { pi_run "$1" "$2/v1" "$3" "$4" openai-responses; }
tool_pi_responses() { tool_pi "$@"; }
run_pi_messages() { pi_run "$1" "$2" "$3" "$4" anthropic-messages; }
tool_pi_messages() { tool_pi "$@"; }

# Continue cn: a local config.yaml (provider openai at the route's /v1)
# given with --config, so no hub login is read; metrics off. -p: headless.
run_cn() {
    cat >"$1/home/config.yaml" <<EOF
name: toolgate
version: 1.0.0
schema: v1
models:
  - name: toolgate
    provider: openai
    model: $3
    apiBase: $2/v1
    apiKey: dummy
    roles: [chat, edit, apply]
EOF
    env -i PATH="$PATH" HOME="$1/home" CONTINUE_METRICS_ENABLED=0 \
        CONTINUE_CLI_ENABLE_TELEMETRY=0 \
        timeout "$TIMEOUT" "$BIN/cn" --config "$1/home/config.yaml" -p "$4"
}
tool_cn() { echo "Read filepath=$1"; }

# Kilo (an opencode fork): the same provider config as opencode, in
# kilo.json, and its KILO_ switches for the network it would reach. Its
# start (a session database, an event bus, project indexing) takes about
# 20 s on an idle machine, but it looks up kilo.ai, api.kilo.ai,
# cloudflare.com and example.com and waits for those lookups where there
# is no network: runs took 75-190 s here. Three times the time to hang.
run_kilo() {
    cat >"$1/work/kilo.json" <<EOF
{
  "provider": {
    "toolgate": {
      "npm": "@ai-sdk/openai-compatible",
      "options": { "baseURL": "$2/v1", "apiKey": "dummy" },
      "models": { "$3": {} }
    }
  },
  "model": "toolgate/$3"
}
EOF
    env -i PATH="$PATH" HOME="$1/home" npm_config_registry=http://127.0.0.1:9/ \
        KILO_NO_DAEMON=1 KILO_DISABLE_AUTOUPDATE=1 KILO_DISABLE_MODELS_FETCH=1 \
        KILO_DISABLE_LSP_DOWNLOAD=1 KILO_DISABLE_SHARE=1 KILO_TELEMETRY_LEVEL=off \
        KILO_DISABLE_SESSION_INGEST=1 KILO_DISABLE_CODEBASE_INDEXING=1 \
        timeout $((3 * TIMEOUT)) "$BIN/kilo" run "$4"
}
tool_kilo() { echo "read filePath=$1"; }

# grok-cli: chat completions at --base-url with --api-key and --model.
run_grok() {
    env -i PATH="$PATH" HOME="$1/home" \
        timeout "$TIMEOUT" "$BIN/grok" --base-url "$2/v1" --api-key dummy --model "$3" -p "$4"
}
tool_grok() { echo "view_file path=$1"; }

# ---- flows ----------------------------------------------------------------
# A flow is a run of its own (run_NAME, and prepare_NAME RUN_DIR TOKEN,
# which makes its files and prints its prompt; check_NAME RUN_DIR TOKEN,
# when there is one, is a further condition of passing), on FLOW_ROUTES.

# make_pdf FILE TEXT: a one-page PDF whose (uncompressed) page draws TEXT.
make_pdf() {
    "$PY" - "$1" "$2" <<'EOF'
import sys
text = sys.argv[2]
stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
out, offs = bytearray(b"%PDF-1.4\n"), []
for i, o in enumerate(objs, 1):
    offs.append(len(out))
    out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
xref = len(out)
out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
out += b"".join(b"%010d 00000 n \n" % o for o in offs)
out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
open(sys.argv[1], "wb").write(out)
EOF
}

# make_png FILE TEXT: an 8x8 grey PNG that carries TEXT in a tEXt chunk,
# so the mock finds TEXT in the image's bytes when they reach it unchanged.
make_png() {
    "$PY" - "$1" "$2" <<'EOF'
import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
raw = b"".join(b"\0" + b"\x80" * 8 for _ in range(8))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0))
       + chunk(b"tEXt", b"Comment\0" + sys.argv[2].encode())
       + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
open(sys.argv[1], "wb").write(png)
EOF
}

# Claude Code reads a PDF: Read answers a base64 application/pdf document
# block in its tool_result; the token is the page's text.
run_claude_pdf() { run_claude "$@"; }
prepare_claude_pdf() {
    make_pdf "$1/work/doc.pdf" "The secret word is $2."
    echo "Read the file doc.pdf and tell me the secret word. MOCK_CALL Read file_path=$1/work/doc.pdf"
}

# Claude Code reads an image: Read answers an image block in its
# tool_result; the token travels in the PNG's bytes (MOCK_SEEN).
run_claude_image() { run_claude "$@"; }
prepare_claude_image() {
    make_png "$1/work/image.png" "$2"
    echo "Look at the image image.png. MOCK_CALL Read file_path=$1/work/image.png"
}

# Claude Code loads a deferred MCP tool with ToolSearch: its MCP tools are
# not in the first request's tools; the model calls ToolSearch
# ({query: "select:mcp__catalog__read_note"}), whose tool_result holds a
# tool_reference block, and then the loaded tool, which an MCP server
# (test/agents/mcp_catalog.mjs --read) answers with the note's text. On a
# discovery route the model sees no ToolSearch: it searches (search_tools)
# and calls the tool with call_tool from the first turn, the name Claude
# Code lists as deferred being in the catalog (bridge/messages_deferred.c),
# and Claude Code runs it.
run_claude_mcp() {
    printf '%s\n' '[{"type":"function","function":{"name":"read_note","description":"Reads a note file and returns its text.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]' \
        >"$1/tools.json"
    printf '{"mcpServers":{"catalog":{"command":"node","args":["%s","%s","%s","--read"]}}}\n' \
        "$DIR/mcp_catalog.mjs" "$1/tools.json" "$1/calls.log" >"$1/mcp.json"
    run_claude "$@" --mcp-config "$1/mcp.json" --allowedTools mcp__catalog__read_note
}
prepare_claude_mcp() {
    echo "Read the note with the catalog's tool. MOCK_CALL mcp__catalog__read_note path=$1/work/note.txt"
}
# the MCP tool ran (the server logged its call), its text came back, and
# no request was refused on the way (Claude Code gets the MCP tool without
# ToolSearch too once it turned tool search off after three 400s)
check_claude_mcp() {
    grep -q read_note "$1/calls.log" 2>/dev/null && grep -q "MOCK_RESULT:.*$2" "$1/out" &&
        [ -z "$(refused_requests claude_mcp "${1##*-}")" ]
}

# Claude Code's sub-agent: the model calls the Agent tool (in the
# foreground) with a prompt that holds the sub-agent's own directive; the
# sub-agent reads the note and its final text is the Agent tool's result.
run_claude_task() { run_claude "$@"; }
prepare_claude_task() {
    echo "Ask a sub-agent to read note.txt. MOCK_CALL Agent description=read-the-note subagent_type=general-purpose run_in_background=false prompt='Read the file note.txt. MOCK_NEXT Read file_path=$1/work/note.txt'"
}

# Claude Code's second turn: the first reads the note, the second (-c)
# asks without a directive; only the first turn's history in the request
# lets the model answer with the token.
tool_claude_cont() { tool_claude "$@"; }
run_claude_cont() {
    run_claude "$@" >"$1/out1" || return $?
    run_claude "$1" "$2" "$3" "What was the secret word again?" -c
}

# Claude Code's WebSearch: the tool is Claude Code's own, but it runs by
# asking the API again, with only the server tool web_search_20250305 and
# tool_choice forcing it; a chat upstream has no such tool.
run_claude_websearch() { run_claude "$@" --allowedTools WebSearch; }
prepare_claude_websearch() {
    echo "Search the web for the secret word. MOCK_CALL WebSearch query='secret word $2'"
}

# Claude Code's /compact: a first turn reads the note, a second (-c)
# compacts the session (a request whose history holds the tool call and
# its result, asking for a summary), a third (-c) asks again: only what
# the summary kept can answer.
tool_claude_compact() { tool_claude "$@"; }
run_claude_compact() {
    run_claude "$@" >"$1/out1" || return $?
    run_claude "$1" "$2" "$3" "/compact" -c >"$1/out2" || return $?
    run_claude "$1" "$2" "$3" "What was the secret word again? MOCK_RECALL" -c
}
# the summary was asked for (the compact request held the tool's result),
# and the turn after it still has the word
check_claude_compact() {
    grep -q "MOCK_RECALLED:.*$2" "$1/out" && [ -z "$(refused_requests claude_compact "${1##*-}")" ]
}

# Claude Code's structured output (-p --json-schema): its StructuredOutput
# tool takes the schema as its input schema, and the final answer is that
# tool's call. A read first whose result scripts the call (MOCK_THEN), so
# the token reaches the output only through the call's arguments, which
# come back in the JSON result's structured_output.
run_claude_schema() {
    run_claude "$@" --output-format json \
        --json-schema '{"type":"object","properties":{"word":{"type":"string"},"sure":{"type":"boolean"}},"required":["word"]}'
}
prepare_claude_schema() {
    printf 'MOCK_THEN StructuredOutput word=%s\n' "$2" >"$1/work/first.txt"
    echo "Follow first.txt. MOCK_CALL Read file_path=$1/work/first.txt"
}
check_claude_schema() {
    "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(r.get("structured_output",{}).get("word")!=sys.argv[2])' \
        "$1/out" "$2" 2>/dev/null
}

# Codex with its default model: no model in config.toml, so it sends its
# tools in an additional_tools input item, not in tools: namespaces
# (flattened by the bridge as functions__exec...) with the code-mode exec
# tool, whose input is JavaScript that calls the nested tools.
run_codex_default() { run_codex "$1" "$2" "" "$4"; }
prepare_codex_default() {
    echo "List the box. MOCK_CALL functions__exec input='text(await tools.exec_command({cmd: \"ls $1/work/box\"}))'"
}

# On a route whose model reads text only (deepseek: rule 90), the image
# cannot reach it: the flow passes when the tool ran, its result went back
# with the note in the image's place (the token must not arrive), the final
# text was printed and no request was refused; elsewhere the token must
# arrive.
image_seen() {  # image_seen DIR TOKEN AGENT
    case ${1##*-} in
    deepseek)
        grep -q "MOCK_RESULT:" "$1/out" && ! grep -q "MOCK_RESULT:.*$2" "$1/out" &&
            [ -z "$(refused_requests "$3" deepseek)" ] ;;
    *) grep -q "MOCK_RESULT:.*$2" "$1/out" ;;
    esac
}
check_claude_image() { image_seen "$1" "$2" claude_image; }
check_codex_image() { image_seen "$1" "$2" codex_image; }

# Codex's view_image: its function_call_output holds an input_image part.
run_codex_image() { run_codex "$@"; }
prepare_codex_image() {
    make_png "$1/work/image.png" "$2"
    echo "Look at the image image.png. MOCK_CALL view_image path=$1/work/image.png"
}

# Codex's apply_patch (in its workspace-write sandbox): the patch must
# really change the file. A model without Codex's metadata (as here) gets
# no apply_patch tool; it calls apply_patch through exec_command, which
# Codex takes out of the shell and applies itself.
run_codex_patch() {
    codex_config "$1" "$2" "$3"
    codex_exec "$1" -s workspace-write "$4"
}
prepare_codex_patch() {
    printf 'old line\n' >"$1/work/patched.txt"
    printf '%s\n' "Change patched.txt. MOCK_CALL exec_command cmd='apply_patch <<EOF\\n*** Begin Patch\\n*** Update File: patched.txt\\n@@\\n-old line\\n+$2\\n*** End Patch\\nEOF'"
}
check_codex_patch() { [ "$(cat "$1/work/patched.txt")" = "$2" ]; }

# Codex's freeform apply_patch: for a model in its catalogue whose
# apply_patch_tool_type is "freeform" (gpt-5.5), apply_patch is a custom
# tool with a Lark grammar, its call a custom_tool_call whose input is the
# patch itself (no JSON); the route's own model stays upstream's concern.
run_codex_freeform() {
    codex_config "$1" "$2" gpt-5.5
    codex_exec "$1" -s workspace-write "$4"
}
prepare_codex_freeform() {
    printf 'old line\n' >"$1/work/patched.txt"
    printf '%s\n' "Change patched.txt. MOCK_CALL apply_patch input='*** Begin Patch\\n*** Update File: patched.txt\\n@@\\n-old line\\n+$2\\n*** End Patch'"
}
check_codex_freeform() { check_codex_patch "$@"; }

# Codex's --output-schema: the schema goes as the Responses text.format
# (json_schema, strict), which the bridge gives upstream as response_format;
# the directive names a tool Codex does not have, so the mock answers JSON
# sampled from the schema it got, which Codex prints.
run_codex_schema() {
    printf '%s\n' '{"type":"object","properties":{"word":{"type":"string"},"count":{"type":"integer"}},"required":["word","count"],"additionalProperties":false}' \
        >"$1/schema.json"
    codex_config "$1" "$2" "$3"
    codex_exec "$1" --output-schema "$1/schema.json" "$4"
}
prepare_codex_schema() { echo "Answer in JSON. MOCK_CALL no_such_tool"; }
check_codex_schema() { [ "$(tail -n 1 "$1/out")" = '{"word":"x","count":1}' ]; }

# Codex's second turn: exec resume --last, without a directive.
tool_codex_resume() { tool_codex "$@"; }
run_codex_resume() {
    run_codex "$@" >"$1/out1" || return $?
    codex_exec "$1" resume --last "What was the secret word again?"
}

# Codex with reasoning on, two turns: the effort asked for, the model's
# reasoning before its call (the mock's MOCK_THINK) shown by Codex, and
# the first turn's history, reasoning items with it, taken back in the
# second (exec resume), which has no directive.
prepare_codex_reason() {
    echo "List the box. MOCK_THINK MOCK_CALL $(tool_codex "$1/work/note.txt")"
}
check_codex_reason() {
    grep -q "MOCK_THOUGHT: calling" "$1/err" && grep -q "MOCK_RESULT:.*$2" "$1/out"
}
run_codex_reason() {
    codex_config "$1" "$2" "$3" 'model_reasoning_effort = "high"
model_reasoning_summary = "detailed"'
    codex_exec "$1" "$4" >"$1/out1" || return $?
    codex_exec "$1" resume --last "What was the secret word again?"
}

# opencode reads an image: its read tool answers an image file as an
# attachment of the tool result, which opencode sends in a user message
# after the tool message, for a model whose options say it reads images
# (without them it sends an error text in the image's place).
run_opencode_image() {
    OPENCODE_MODEL='{"attachment": true, "modalities": {"input": ["text", "image"], "output": ["text"]}}' \
        run_opencode "$@"
}
prepare_opencode_image() {
    make_png "$1/work/image.png" "$2"
    echo "Look at the image image.png. MOCK_CALL read filePath=$1/work/image.png"
}
check_opencode_image() { image_seen "$1" "$2" opencode_image; }

# opencode reads a PDF: the attachment goes as a chat file part (a PDF
# data URL) in the user message after the tool message, for a model whose
# options say it reads PDFs; the token is the page's text, which reaches a
# model that reads text only (deepseek) as the PDF's extracted text.
run_opencode_pdf() {
    OPENCODE_MODEL='{"attachment": true, "modalities": {"input": ["text", "image", "pdf"], "output": ["text"]}}' \
        run_opencode "$@"
}
prepare_opencode_pdf() {
    make_pdf "$1/work/doc.pdf" "The secret word is $2."
    echo "Read the file doc.pdf and tell me the secret word. MOCK_CALL read filePath=$1/work/doc.pdf"
}

# opencode's sub-agent: the model calls the task tool, whose prompt holds
# the sub-agent's own directive; the sub-agent's final text is the task
# tool's result.
run_opencode_task() { run_opencode "$@"; }
prepare_opencode_task() {
    echo "Ask a sub-agent to read note.txt. MOCK_CALL task description=read-the-note subagent_type=general prompt='Read the file note.txt. MOCK_NEXT read filePath=$1/work/note.txt'"
}

# Gemini CLI reads an image: read_file answers inlineData, which goes
# back in the functionResponse's parts (or beside it).
run_gemini_image() { run_gemini "$@"; }
prepare_gemini_image() {
    make_png "$1/work/image.png" "$2"
    echo "Look at the image image.png. MOCK_CALL read_file file_path=$1/work/image.png"
}
check_gemini_image() { image_seen "$1" "$2" gemini_image; }

# Gemini CLI's second turn (--resume latest): the first turn's
# functionCall and functionResponse (with the ids toolgate gave) go back
# as history, and the second prompt has no directive.
tool_gemini_cont() { tool_gemini "$@"; }
run_gemini_cont() {
    run_gemini "$@" >"$1/out1" || return $?
    run_gemini "$1" "$2" "$3" "What was the secret word again?" --resume latest
}

# Gemini CLI's chat compression: with compressionThreshold at a millionth
# of the context, the second turn (--resume latest) first compresses the
# history (two generateContent requests, unstreamed and without tools,
# over a history that holds the functionCall and its functionResponse:
# a <state_snapshot> and its check), then asks with the mock's MOCK_RECALL,
# which finds the token in what the compressed session kept.
tool_gemini_compress() { tool_gemini "$@"; }
run_gemini_compress() {
    GEMINI_SETTINGS='"model":{"compressionThreshold":0.000001}' run_gemini "$@" >"$1/out1" || return $?
    GEMINI_SETTINGS='"model":{"compressionThreshold":0.000001}' \
        run_gemini "$1" "$2" "$3" "What was the secret word again? MOCK_RECALL" --resume latest
}
check_gemini_compress() {
    grep -q "MOCK_RECALLED:.*$2" "$1/out" &&
        grep -F "\"path\":\"/gemini_compress-${1##*-}/" "$TG_LOG" | grep -q ':generateContent"' &&
        [ -z "$(refused_requests gemini_compress "${1##*-}")" ]
}

# Gemini CLI's google_web_search: the tool is the CLI's own, but it runs by
# asking the API again (generateContent, unstreamed) with only the
# googleSearch tool, which only Google runs: dropped and said, the side
# request answered, and its text goes back as the tool's result.
run_gemini_websearch() { run_gemini "$@"; }
prepare_gemini_websearch() {
    echo "Search the web for the secret word. MOCK_CALL google_web_search query='secret word $2'"
}

# pi reads an image (chat completions): its read tool answers an image
# block beside the result's text, for a model whose input takes images
# (without it pi leaves the image out).
run_pi_image() { PI_INPUT='["text", "image"]' run_pi "$@"; }
prepare_pi_image() {
    make_png "$1/work/image.png" "$2"
    echo "Look at the image image.png. MOCK_CALL read path=$1/work/image.png"
}
check_pi_image() { image_seen "$1" "$2" pi_image; }

# Reasoning before the call (the mock's MOCK_THINK answers
# reasoning_content first): each agent sends back with the call's result
# what it keeps of it (Claude Code a thinking block with an empty
# signature), which the route's provider must accept.
for _a in claude opencode pi gemini qwen; do
    eval "run_${_a}_think() { run_$_a \"\$@\"; }
prepare_${_a}_think() {
    echo \"Read the file note.txt and tell me the secret word. MOCK_THINK MOCK_CALL \$(tool_$_a \"\$1/work/note.txt\")\"
}"
done

# opencode's two-step chain: the first read returns the directive of the
# second (the mock's MOCK_THEN), which reads the note: two calls in a row,
# each made from the last one's result, their ids and results kept apart.
run_opencode_chain() { run_opencode "$@"; }
prepare_opencode_chain() {
    printf 'MOCK_THEN read filePath=%s\n' "$1/work/note.txt" >"$1/work/first.txt"
    echo "Follow first.txt to the note. MOCK_CALL read filePath=$1/work/first.txt"
}

# start_run AGENT ROUTE: in the background; its exit status lands in rc.
start_run() {
    _d="$TG_TMP/run/$1-$2"
    mkdir -p "$_d/home" "$_d/work"
    route_info "$2"
    _token="tok-$1-$2-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
    printf 'The secret word is %s.\n' "$_token" >"$_d/work/note.txt"
    mkdir "$_d/work/box" && : >"$_d/work/box/$_token"
    echo "$_token" >"$_d/token"
    if command -v "prepare_$1" >/dev/null; then
        _prompt=$("prepare_$1" "$_d" "$_token")
    else
        _prompt="Read the file note.txt and tell me the secret word. MOCK_CALL $(tool_$1 "$_d/work/note.txt")"
    fi
    (_t0=$(now_ms)
     cd "$_d/work" && "run_$1" "$_d" "$TG_URL/$1-$2" "$R_MODEL" "$_prompt" \
        </dev/null >"$_d/out" 2>"$_d/err"
     echo $? >"$_d/rc"
     echo $(($(now_ms) - _t0)) >"$_d/ms") &
    RUN_PIDS="$RUN_PIDS $!"
}

# diagnose AGENT ROUTE: what the agent printed and what toolgate and the
# mock logged for the run's route.
diagnose() {
    _d="$TG_TMP/run/$1-$2"
    echo "exit status: $(cat "$_d/rc" 2>/dev/null) (124 = timed out after ${TIMEOUT}s), $(cat "$_d/ms" 2>/dev/null) ms"
    echo "--- agent stdout"
    tail -n 25 "$_d/out" | cut -c1-400
    echo "--- agent stderr"
    tail -n 15 "$_d/err" | cut -c1-400
    echo "--- toolgate"
    grep -F "/$1-$2" "$TG_LOG" | cut -c1-600
    grep -v '^{' "$TG_LOG" | grep -F "$1-$2" | cut -c1-600
    echo "--- mock"
    grep -F "/$1-$2/" "$TG_TMP/mock.err" | cut -c1-600
}

# refused_requests AGENT ROUTE: the run's requests that toolgate answered
# with a status other than 2xx ("METHOD PATH STATUS" lines), or a line that
# says none reached it.
refused_requests() {
    "$PY" - "$TG_LOG" "/$1-$2" <<'EOF'
import json, sys
seen = 0
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if not line.startswith("{"):
        continue
    try:
        r = json.loads(line)
    except ValueError:
        continue
    p = r.get("path") or ""
    if p != sys.argv[2] and not p.startswith(sys.argv[2] + "/"):
        continue
    seen += 1
    if not 200 <= r.get("status", 0) < 300:
        print(r.get("method"), p, r.get("status"))
if not seen:
    print("no request of the agent reached toolgate")
EOF
}

# label AGENT: the agent's name and version, and the flow.
label() {
    _agent=${1%%_*}
    printf '%s %s' "$_agent" "$(cat "$TG_TMP/version.$_agent")"
    case $1 in
    claude_pdf) printf ', Read of a PDF' ;;
    claude_image) printf ', Read of an image' ;;
    claude_mcp) printf ', a deferred MCP tool (ToolSearch loads it; search_tools finds it on discovery)' ;;
    claude_task) printf ', a sub-agent (Agent tool)' ;;
    claude_cont) printf ', a second turn with -c' ;;
    claude_websearch) printf ', WebSearch (its server tool web_search_20250305, forced)' ;;
    claude_compact) printf ', /compact, then a turn after it' ;;
    claude_schema) printf ', --json-schema (its StructuredOutput tool)' ;;
    codex_default) printf ', its default model (tools in additional_tools)' ;;
    codex_schema) printf ', --output-schema (text.format json_schema)' ;;
    codex_freeform) printf ', freeform apply_patch (a custom tool with a grammar, gpt-5.5)' ;;
    opencode_image) printf ', read of an image (an attachment of the tool result)' ;;
    opencode_pdf) printf ', read of a PDF (a file part)' ;;
    opencode_task) printf ', a sub-agent (task tool)' ;;
    gemini_image) printf ', read_file of an image (inlineData)' ;;
    gemini_cont) printf ', a second turn with --resume latest' ;;
    gemini_websearch) printf ', google_web_search (its googleSearch tool)' ;;
    gemini_compress) printf ', chat compression before a second turn' ;;
    pi_image) printf ', read of an image, over chat completions' ;;
    *_think) printf ', reasoning before the call, sent back with its result' ;;
    codex_image) printf ', view_image' ;;
    codex_patch) printf ', apply_patch changes a file' ;;
    codex_resume) printf ', a second turn with exec resume' ;;
    codex_reason) printf ', reasoning on, a second turn with exec resume' ;;
    opencode_chain) printf ', a two-step chain (a read whose result scripts the next)' ;;
    pi) printf ' over chat completions' ;;
    pi_responses) printf ' over the Responses API' ;;
    pi_messages) printf ' over the Messages API' ;;
    esac
}

# report AGENT ROUTE: the TAP lines of a finished run.
report() {
    _d="$TG_TMP/run/$1-$2"
    _mode=streamed
    [ "$1" = claude_whole ] && _mode="whole: the unstreamed retry of a cut stream"
    _name="$(label "$1"), route $2 ($(route_info "$2"; echo "$R_DIALECT $R_MODEL${R_EXTRA:+, $R_EXTRA}"), $_mode)"
    _token=$(cat "$_d/token")
    _why=$(todo_reason "$1" "$2" trip)
    _pass=1
    if [ "$(cat "$_d/rc" 2>/dev/null)" != 0 ]; then
        _pass=1
    elif command -v "check_$1" >/dev/null; then
        "check_$1" "$_d" "$_token" && _pass=0
    elif grep -q "MOCK_RESULT:.*$_token" "$_d/out"; then
        _pass=0
    fi
    # discovery: the model found the tool through an inner round
    case $2 in disc*)
        grep -F "\"path\":\"/$1-$2/" "$TG_LOG" | grep -q '"discovery_rounds":[1-9]' || _pass=1 ;;
    esac
    # whole: the answers it printed came from unstreamed requests
    if [ "$1" = claude_whole ] && ! grep -F "\"path\":\"/$1-$2/v1/messages\"" "$TG_LOG" |
        grep -q '"stream":false'; then
        _pass=1
    fi
    _what="$_name: the tool ran, its result went back, the final text was printed"
    if [ -n "$_why" ]; then
        todo "$_pass" "$_what" "$_why" "$(diagnose "$1" "$2")"
    elif [ "$_pass" = 0 ]; then
        ok "$_what"
    else
        not_ok "$_what" "$(diagnose "$1" "$2")"
    fi
    _refused=$(refused_requests "$1" "$2")
    _what="$_name: every request it made was answered 2xx"
    _why=$(todo_reason "$1" "$2" 2xx)
    _pass=1
    [ -z "$_refused" ] && _pass=0
    if [ -n "$_why" ]; then
        todo "$_pass" "$_what" "$_why" "$_refused"
    elif [ "$_pass" = 0 ]; then
        ok "$_what"
    else
        not_ok "$_what" "$_refused
$(diagnose "$1" "$2")"
    fi
}

version @anthropic-ai/claude-code >"$TG_TMP/version.claude"
version @openai/codex >"$TG_TMP/version.codex"
version opencode-ai >"$TG_TMP/version.opencode"
version @qwen-code/qwen-code >"$TG_TMP/version.qwen"
version @google/gemini-cli >"$TG_TMP/version.gemini"
version @mariozechner/pi-coding-agent >"$TG_TMP/version.pi"
version @continuedev/cli >"$TG_TMP/version.cn"
version @kilocode/cli >"$TG_TMP/version.kilo"
version @vibe-kit/grok-cli >"$TG_TMP/version.grok"


# The agents of one route run at once, JOBS at a time (node processes of
# a few hundred MB each); the routes one after the other.
for r in $ROUTES; do
    batch=
    for a in $AGENTS ""; do
        if [ -n "$a" ]; then
            runs_on "$a" "$r" || continue
            batch="$batch $a"
            [ $(echo $batch | wc -w) -lt "$JOBS" ] && continue
        fi
        [ -n "$batch" ] || continue
        RUN_PIDS=
        for b in $batch; do
            start_run "$b" "$r"
        done
        wait $RUN_PIDS
        for b in $batch; do
            report "$b" "$r"
            echo "# $b on $r took $(cat "$TG_TMP/run/$b-$r/ms") ms"
        done
        batch=
    done
done

stop_toolgate
# TG_AGENT_KEEP=DIR keeps the runs and the logs there, to look into
if [ -n "$TG_AGENT_KEEP" ]; then
    mkdir -p "$TG_AGENT_KEEP" && cp -r "$TG_TMP/run" "$TG_TMP/mock.err" "$TG_LOG" "$TG_AGENT_KEEP"
    curl -s "http://127.0.0.1:$MOCK_PORT/_last" >"$TG_AGENT_KEEP/last.json"
fi
finish
