#!/bin/sh
# agents.sh -- real coding-agent CLIs, headless, through toolgate.
#
# Claude Code (Anthropic's Messages API), Codex (OpenAI's Responses API),
# opencode and Qwen Code (chat completions), pinned in test/agents's
# package lock and installed with npm ci when the lock changed, each run
# with its default settings: only the base URL, a dummy key and the model
# are set, plus the documented switches that keep it off the network
# (telemetry, update checks, model catalogues). HOME is a fresh directory
# per run, so no login or earlier state is read.
#
# Each agent gets a task whose prompt carries the mock's directive
# ("MOCK_CALL <tool> key=value", test/mock/mock_upstream.c): the scripted
# model calls the agent's own tool to read a file that holds a token (or,
# Codex, to list a directory that holds a file of that name), the agent runs it and sends the result back, and the model's final
# text quotes that result, which the agent prints. The token in the agent's
# output proves the round trip. Every agent runs on one route per dialect
# (gemini with a 2.5 and a 3 model, anthropic, mistral, openai-strict, groq,
# deepseek) and on two with discovery on (Gemini 2.5 and 3), each route in front of the
# mock's strict validator for that provider, so a request the provider
# would refuse fails here too. Every agent streams, and none of them has a
# setting for non-streamed requests; Claude Code falls back to them when a
# stream breaks, which claude_whole provokes to test the whole answers.
#
# A second check per run: every request the agent made (side requests
# included: titles, quota checks, token counts, model lists) got a 2xx.
#
# Known breaks waiting for their fix are TAP "# TODO" lines (todo_reason
# below), which test/run.sh counts neither way. A failure prints what the
# agent printed and what toolgate and the mock logged for its route.
#
# TG_AGENTS / TG_AGENT_ROUTES limit the runs (space-separated names);
# TG_AGENT_LOG sets toolgate's log_level (default info).
. "$(dirname "$0")/lib.sh"

DIR="$TG_ROOT/test/agents"
BIN="$DIR/node_modules/.bin"
AGENTS=${TG_AGENTS:-claude claude_whole codex opencode qwen}
ROUTES=${TG_AGENT_ROUTES:-gemini25 gemini3 anthropic mistral strict groq deepseek disc25 disc}
TIMEOUT=60

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
# None is open: the breaks of issue 15 are fixed.
todo_reason() {
    case "$1 $2 $3" in
    *) ;;
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

# Claude Code: ANTHROPIC_BASE_URL is the route's prefix (the SDK appends
# /v1/messages); the key goes as Bearer (ANTHROPIC_AUTH_TOKEN). -p prints
# the final text; the Read tool needs no permission inside the work dir.
# The four switches that CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC stands
# for are set one by one, so that its check of the base URL (HEAD
# <base>/api/hello), which that variable also turns off, is made.
# On a route to Claude models it keeps its own default model (no
# ANTHROPIC_MODEL), as a user of such a route would.
run_claude() {
    case $3 in claude-*) set -- "$1" "$2" "" "$4" ;; esac
    env -i PATH="$PATH" HOME="$1/home" \
        ANTHROPIC_BASE_URL="$2" ANTHROPIC_AUTH_TOKEN=dummy ${3:+ANTHROPIC_MODEL="$3"} \
        DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 \
        DISABLE_BUG_COMMAND=1 \
        timeout "$TIMEOUT" "$BIN/claude" -p "$4"
}
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
    mkdir -p "$1/home/.codex"
    cat >"$1/home/.codex/config.toml" <<EOF
model = "$3"
model_provider = "toolgate"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.toolgate]
name = "toolgate"
base_url = "$2/v1"
env_key = "TOOLGATE_API_KEY"
EOF
    env -i PATH="$PATH" HOME="$1/home" TOOLGATE_API_KEY=dummy \
        timeout "$TIMEOUT" "$BIN/codex" exec --skip-git-repo-check "$4"
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

# start_run AGENT ROUTE: in the background; its exit status lands in rc.
start_run() {
    _d="$TG_TMP/run/$1-$2"
    mkdir -p "$_d/home" "$_d/work"
    route_info "$2"
    _token="tok-$1-$2-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
    printf 'The secret word is %s.\n' "$_token" >"$_d/work/note.txt"
    mkdir "$_d/work/box" && : >"$_d/work/box/$_token"
    echo "$_token" >"$_d/token"
    _prompt="Read the file note.txt and tell me the secret word. MOCK_CALL $(tool_$1 "$_d/work/note.txt")"
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

# report AGENT ROUTE: the TAP lines of a finished run.
report() {
    _d="$TG_TMP/run/$1-$2"
    _v=$(cat "$TG_TMP/version.$1")
    _mode=streamed
    [ "$1" = claude_whole ] && _mode="whole: the unstreamed retry of a cut stream"
    _name="${1%_whole} $_v, route $2 ($(route_info "$2"; echo "$R_DIALECT $R_MODEL${R_EXTRA:+, $R_EXTRA}"), $_mode)"
    _token=$(cat "$_d/token")
    _why=$(todo_reason "$1" "$2" trip)
    _pass=1
    if [ "$(cat "$_d/rc" 2>/dev/null)" = 0 ] && grep -q "MOCK_RESULT:.*$_token" "$_d/out"; then
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
cp "$TG_TMP/version.claude" "$TG_TMP/version.claude_whole"
version @openai/codex >"$TG_TMP/version.codex"
version opencode-ai >"$TG_TMP/version.opencode"
version @qwen-code/qwen-code >"$TG_TMP/version.qwen"

# The agents of one route run at once (four processes of a few hundred MB
# each); the routes one after the other.
for r in $ROUTES; do
    RUN_PIDS=
    for a in $AGENTS; do
        start_run "$a" "$r"
    done
    wait $RUN_PIDS
    for a in $AGENTS; do
        report "$a" "$r"
        echo "# $a on $r took $(cat "$TG_TMP/run/$a-$r/ms") ms"
    done
done

stop_toolgate
finish
