# lib.sh -- shared helpers for the integration tests (POSIX sh, sourced).
#
# A test sources this file, starts the mock upstream and toolgate, makes
# requests with curl and prints TAP lines ("ok N - name" / "not ok N -
# name"), which test/run.sh counts. Everything a test starts is stopped by
# the EXIT trap, and the script exits non-zero when any check failed.
#
# Environment (set by test/run.sh; defaults let a test run on its own):
#   TG_ROOT  repository root            TG_BIN   toolgate binary (ASan build)
#   TG_MOCK  mock-upstream binary
#
# Sourced only: run as a script (test/run.sh runs every *.sh here), it
# does nothing and exits 0 without printing a TAP line.
case "$0" in */lib.sh | lib.sh) exit 0 ;; esac

TG_ROOT="${TG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}"
TG_BIN="${TG_BIN:-$TG_ROOT/build-asan/toolgate}"
TG_MOCK="${TG_MOCK:-$TG_ROOT/build-asan/mock-upstream}"
export TG_ROOT TG_BIN TG_MOCK
# Sanitizer reports must fail the run, never hide in a log.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# The real interpreter, not a version-manager shim: shims cost ~0.5 s a call.
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
PY=${PY:-python3}

TG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tg-it.XXXXXX")
TAP_N=0
TAP_FAILED=0
MOCK_PID=
TG_PID=

# ---- TAP -----------------------------------------------------------------

ok() {
    TAP_N=$((TAP_N + 1))
    echo "ok $TAP_N - $1"
}

# not_ok NAME DETAIL: the detail goes on "#" lines, as TAP diagnostics.
not_ok() {
    TAP_N=$((TAP_N + 1))
    TAP_FAILED=$((TAP_FAILED + 1))
    echo "not ok $TAP_N - $1"
    [ -n "$2" ] && printf '%s\n' "$2" | sed 's/^/#   /'
    return 0
}

# todo PASSED NAME REASON [DETAIL]: a test of a known break that waits for
# its fix (TAP "# TODO"): run and shown, counted neither way by
# test/run.sh; PASSED is 0 when it passed (then the TODO can go).
todo() {
    TAP_N=$((TAP_N + 1))
    if [ "$1" = 0 ]; then
        echo "ok $TAP_N - $2 # TODO $3 (passes now: remove the TODO)"
    else
        echo "not ok $TAP_N - $2 # TODO $3"
        [ -n "$4" ] && printf '%s\n' "$4" | sed 's/^/#   /'
    fi
    return 0
}

# check NAME CMD...: ok when CMD exits 0.
check() {
    _name=$1
    shift
    if "$@" >"$TG_TMP/check.out" 2>&1; then
        ok "$_name"
    else
        not_ok "$_name" "command failed: $*
$(head -c 2000 "$TG_TMP/check.out")"
    fi
}

# expect_eq NAME WANT GOT
expect_eq() {
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "want: $2
got:  $3"; fi
}

# expect_match NAME PATTERN TEXT: TEXT contains PATTERN (grep -E).
expect_match() {
    if printf '%s' "$3" | grep -Eq -- "$2"; then ok "$1"; else not_ok "$1" "want /$2/ in:
$(printf '%s' "$3" | head -c 1500)"; fi
}

# ---- JSON ----------------------------------------------------------------

# json_get FILE PATH: prints the value at PATH ("choices.0.message.content";
# "" = the whole document; a string met on the way is read as JSON text, so
# "body.model" reads the mock's record of a body); strings raw, anything
# else as compact JSON.
# Exits 1 when FILE is not JSON or PATH does not exist.
json_get() {
    "$PY" - "$1" "$2" <<'EOF'
import json, sys
try:
    v = json.load(open(sys.argv[1], encoding="utf-8"))
    for part in [p for p in sys.argv[2].split(".") if p != ""]:
        if isinstance(v, str):  # a JSON text (the mock's record of a body)
            v = json.loads(v)
        v = v[int(part)] if isinstance(v, list) else v[part]
except Exception:
    sys.exit(1)
print(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))
EOF
}

# json_lacks FILE PATH KEY: "lacks" when the object at PATH (json_get's
# paths) exists and has no KEY, "has" when it has it, and "no object at
# PATH" otherwise: a missing record never passes for a missing key.
json_lacks() {
    _obj=$(json_get "$1" "$2") || { echo "no object at $2"; return; }
    printf '%s' "$_obj" | "$PY" -c '
import json, sys
v = json.loads(sys.stdin.read())
print(("has" if sys.argv[1] in v else "lacks") if isinstance(v, dict) else "no object")' "$3"
}

# json_valid FILE: exits 0 when FILE holds one JSON document.
json_valid() {
    "$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null
}

# ---- node packages ---------------------------------------------------------

# npm_ci DIR: installs DIR's locked node packages (npm ci) whenever its
# package-lock.json changed since they were installed (a stamp of the lock
# they came from), so a checkout that gains or bumps a package does not
# test against the old set. Prints a not_ok line and returns 1 on failure.
npm_ci() {
    cmp -s "$1/package-lock.json" "$1/node_modules/.toolgate-lock" 2>/dev/null && return 0
    if ! (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >"$TG_TMP/npm.log" 2>&1); then
        not_ok "npm ci in ${1#"$TG_ROOT"/}" "$(tail -n 20 "$TG_TMP/npm.log")"
        return 1
    fi
    cp "$1/package-lock.json" "$1/node_modules/.toolgate-lock"
}

# ---- agents ----------------------------------------------------------------

# agents_ready DIR: node is there, DIR's locked packages are installed and
# toolgate is built; otherwise a not_ok line and the suite ends.
agents_ready() {
    if ! command -v node >/dev/null 2>&1; then
        not_ok "node is installed" "the agent tests need node >= 20 and npm"
        finish
    fi
    npm_ci "$1" || finish
    [ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
}

# opencode_run RUN_DIR BASE_URL MODEL PROMPT [MORE]: opencode (BIN, TIMEOUT
# of the caller) headless in the current directory, with a provider on the
# AI SDK's openai-compatible package (bundled) in the project's
# RUN_DIR/work/opencode.json, and MORE (JSON members) added to that file
# (OPENCODE_MODEL: the model's own options, {} unless set);
# HOME is RUN_DIR/home. npm is pointed at a closed port: opencode installs
# its plugin types from npm at start, which it can do without.
opencode_run() {
    _ocm=${OPENCODE_MODEL:-"{}"}
    cat >"$1/work/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "provider": {
    "toolgate": {
      "npm": "@ai-sdk/openai-compatible",
      "options": { "baseURL": "$2/v1", "apiKey": "dummy" },
      "models": { "$3": $_ocm }
    }
  },
  "model": "toolgate/$3"${5:+,
  $5}
}
EOF
    env -i PATH="$PATH" HOME="$1/home" npm_config_registry=http://127.0.0.1:9/ \
        OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
        OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 \
        timeout "$TIMEOUT" "$BIN/opencode" run "$4"
}

# claude_run RUN_DIR BASE_URL MODEL PROMPT [ARGS...]: Claude Code (BIN,
# TIMEOUT of the caller) headless in the current directory, HOME is
# RUN_DIR/home, ARGS go to the CLI. ANTHROPIC_BASE_URL is the route's
# prefix (the SDK appends /v1/messages); the key goes as Bearer
# (ANTHROPIC_AUTH_TOKEN). -p prints the final text; the Read tool needs no
# permission inside the work dir. The four switches that
# CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC stands for are set one by one,
# so that its check of the base URL (HEAD <base>/api/hello), which that
# variable also turns off, is made. On a route to Claude models it keeps
# its own default model (no ANTHROPIC_MODEL), as a user of such a route
# would. CLAUDE_ENV (NAME=VALUE words) adds to its environment.
claude_run() {
    _model=$3 _prompt=$4
    case $_model in claude-*) _model= ;; esac
    _home=$1/home _url=$2
    shift 4
    env -i PATH="$PATH" HOME="$_home" \
        ANTHROPIC_BASE_URL="$_url" ANTHROPIC_AUTH_TOKEN=dummy ${_model:+ANTHROPIC_MODEL="$_model"} \
        DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 \
        DISABLE_BUG_COMMAND=1 $CLAUDE_ENV \
        timeout "$TIMEOUT" "$BIN/claude" -p "$_prompt" "$@"
}

# ---- processes -----------------------------------------------------------

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# now_ms: a millisecond clock for timing checks.
now_ms() {
    date +%s%3N
}

# stream_times OUT URL BODY [CURL ARGS...]: POSTs BODY with curl -N and
# writes one line per SSE "data:" line, "MS DATA", MS counted from the
# moment curl was started (by the same process that reads, so the reader's
# start-up cannot delay the stamps).
stream_times() {
    _out=$1
    _url=$2
    _body=$3
    shift 3
    "$PY" - "$_url" "$_body" "$@" >"$_out" <<'EOF'
import subprocess, sys, time
url, body, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
t0 = time.monotonic()
p = subprocess.Popen(["curl", "-sN", "-m", "30", "-H", "Content-Type: application/json",
                      "--data-binary", body] + extra + [url], stdout=subprocess.PIPE)
for line in p.stdout:
    line = line.decode("utf-8", "replace").strip()
    if line.startswith("data:"):
        print(int((time.monotonic() - t0) * 1000), line, flush=True)
p.wait()
EOF
}

# start_mock [-v]: with -v the mock logs one line per request to mock.err
# (mock_log shows it), which tests use to see aborted upstream transfers.
start_mock() {
    "$TG_MOCK" --listen 127.0.0.1:0 "$@" >"$TG_TMP/mock.out" 2>"$TG_TMP/mock.err" &
    MOCK_PID=$!
    _i=0
    while [ $_i -lt 100 ]; do
        MOCK_PORT=$(sed -n 's/^port=\([0-9]*\)$/\1/p' "$TG_TMP/mock.out" 2>/dev/null)
        [ -n "$MOCK_PORT" ] && break
        kill -0 "$MOCK_PID" 2>/dev/null || break
        sleep 0.05
        _i=$((_i + 1))
    done
    if [ -z "$MOCK_PORT" ]; then
        not_ok "mock upstream starts" "$(cat "$TG_TMP/mock.err")"
        exit 1
    fi
    export MOCK_PORT
    MOCK_URL="http://127.0.0.1:$MOCK_PORT"
}

# start_script_upstream NAME SCRIPT [ARGS...]: a Python test upstream (it
# prints port=N once it listens) with its output in $TG_TMP/NAME.out and
# .err; sets UP_PID and UP_PORT, or fails the suite.
start_script_upstream() {
    _name=$1
    _script=$2
    shift 2
    "$PY" "$_script" "$@" >"$TG_TMP/$_name.out" 2>"$TG_TMP/$_name.err" &
    UP_PID=$!
    # up to 60 s while it runs: a script may prepare a lot first (the
    # hostile upstream gzips 256 MB), and a loaded machine is slow
    _i=0
    while [ $_i -lt 1200 ]; do
        UP_PORT=$(sed -n 's/^port=\([0-9]*\)$/\1/p' "$TG_TMP/$_name.out" 2>/dev/null)
        [ -n "$UP_PORT" ] && return 0
        kill -0 "$UP_PID" 2>/dev/null || break
        sleep 0.05
        _i=$((_i + 1))
    done
    not_ok "$_name upstream starts" "$(cat "$TG_TMP/$_name.err")"
    exit 1
}

# start_toolgate CONFFILE [EXTRA ARGS]: waits (60 s max, while it runs) for GET /readyz = 200.
# Returns 1 (after a not_ok line) when toolgate does not come up.
start_toolgate() {
    TG_CONF=$1
    shift
    TG_PORT=$(sed -n 's/^[[:space:]]*listen[[:space:]]*=[[:space:]]*[^:]*:\([0-9]*\).*/\1/p' "$TG_CONF" | head -n 1)
    export TG_PORT
    TG_URL="http://127.0.0.1:$TG_PORT"
    TG_LOG="$TG_TMP/toolgate.$TG_PORT.log"
    "$TG_BIN" serve -c "$TG_CONF" "$@" >>"$TG_LOG" 2>&1 &
    TG_PID=$!
    _i=0
    while [ $_i -lt 1200 ]; do
        if [ "$(curl -s -o /dev/null -m 1 -w '%{http_code}' "$TG_URL/readyz")" = 200 ]; then
            return 0
        fi
        kill -0 "$TG_PID" 2>/dev/null || break
        sleep 0.05
        _i=$((_i + 1))
    done
    not_ok "toolgate starts with $(basename "$TG_CONF")" "$(tail -n 20 "$TG_LOG")"
    kill -KILL "$TG_PID" 2>/dev/null && wait "$TG_PID" 2>/dev/null
    TG_PID=
    return 1
}

# stop_pid PID SECONDS: SIGTERM, then SIGKILL if PID still runs after
# SECONDS, so a hung process fails its test instead of hanging the suite.
# Returns PID's exit status.
stop_pid() {
    kill -TERM "$1" 2>/dev/null
    _i=0
    while kill -0 "$1" 2>/dev/null && [ $_i -lt $(($2 * 10)) ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1"
}

# stop_toolgate: SIGTERM, wait, and report a non-zero exit or any sanitizer
# report in its log as a failed test. Sets TG_STATUS.
stop_toolgate() {
    [ -n "$TG_PID" ] || return 0
    stop_pid "$TG_PID" 20
    TG_STATUS=$?
    TG_PID=
    sanitizer_clean "toolgate ($(basename "$TG_CONF"))" "$TG_LOG"
}

# sanitizer_clean WHAT LOG: one TAP line; fails on ASan/UBSan/LSan output.
sanitizer_clean() {
    if grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined)' "$2" 2>/dev/null; then
        not_ok "$1 ran sanitizer-clean" "$(grep -E -A12 'ERROR: |runtime error:' "$2" | head -n 40)"
    else
        ok "$1 ran sanitizer-clean"
    fi
}

stop_all() {
    _rc=$?
    [ -n "$TG_PID" ] && stop_pid "$TG_PID" 10 2>/dev/null
    [ -n "$MOCK_PID" ] && stop_pid "$MOCK_PID" 5 2>/dev/null
    rm -rf "$TG_TMP"
    [ "$TAP_FAILED" -gt 0 ] && _rc=1
    exit $_rc
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# finish: prints the TAP plan; the EXIT trap sets the status.
finish() {
    sanitizer_clean "mock upstream" "$TG_TMP/mock.err"
    echo "1..$TAP_N"
    [ "$TAP_FAILED" -eq 0 ]
    exit $?
}

# ---- requests and confs --------------------------------------------------

# tg_req OUT METHOD PATH [CURL ARGS...]: request to toolgate; body in OUT,
# response headers in OUT.h; prints the HTTP status (000 = no answer).
tg_req() {
    _out=$1
    _method=$2
    _path=$3
    shift 3
    curl -s -m 20 -X "$_method" -o "$_out" -D "$_out.h" -w '%{http_code}' "$@" "$TG_URL$_path"
}

# chat OUT BODY [CURL ARGS...]: POST /v1/chat/completions with a JSON body.
chat() {
    _out=$1
    _body=$2
    shift 2
    tg_req "$_out" POST /v1/chat/completions -H 'Content-Type: application/json' --data-binary "$_body" "$@"
}

# header_value FILE NAME: the value of response header NAME in a -D dump.
header_value() {
    tr -d '\r' <"$1" | sed -n "s/^$2:[[:space:]]*//Ip" | tail -n 1
}

mock_last() {
    curl -s -m 5 "$MOCK_URL/_last" >"$1"
}

mock_count() {
    curl -s -m 5 "$MOCK_URL/_count" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["count"])'
}

mock_log() {
    cat "$TG_TMP/mock.err"
}

mock_reset() {
    curl -s -m 5 -X POST "$MOCK_URL/_reset" >/dev/null
}

# conf_server PORT [EXTRA LINES]: a [server] section on 127.0.0.1:PORT; the
# mock's X-Mock headers are forwarded (forward_headers: an EXTRA line of
# its own replaces this one).
conf_server() {
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 2\nlog_level = warn\nforward_headers = x-mock*\n%s\n\n' "$1" "$2"
}

# conf_route NAME MODELS [EXTRA LINES]: a route to the mock, dialect openai.
conf_route() {
    printf '[route %s]\nmodels = %s\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\n%s\n\n' \
        "$1" "$2" "$MOCK_PORT" "$3"
}
