#!/bin/sh
# deploy/demo.sh -- `make demo`: toolgate at work in a minute, without a key.
#
# It lives in deploy/ because it is a way to run toolgate (beside the
# service and Kubernetes files), not a test: it starts the project's mock
# provider (test/mock/mock_upstream.c) in a Gemini-like personality that
# conf/demo.conf names in its upstream URL, starts toolgate on that conf,
# sends one agent-style request (OpenAI SDK shape, streamed, a tool schema
# Gemini refuses, a bookkeeping key in a message), and shows the four
# bodies: what the agent sent, what went upstream (the mock's /_last),
# what the provider answered (the same upstream request replayed to the
# mock directly: its answers are deterministic) and what the agent got.
# The way up is named by `toolgate rewrite --explain`; the way down by the
# differences between the raw and the received calls, with docs/dialects.md's
# repair numbers (R1, R3...). Then both processes keep running for the
# user's own client until Ctrl-C; DEMO_ONCE=1 stops after showing (the
# test test/integration/demo.sh). Colour only on a terminal (NO_COLOR off).
#
#   TG_BIN, TG_MOCK: the binaries (build/...); TOOLGATE_DEMO_LISTEN: the
#   address (127.0.0.1:8090); DEMO_LOGDIR: where the two processes' stderr
#   goes (a temporary folder, removed at the end).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TG=${TG_BIN:-$BUILD/toolgate}
MOCK=${TG_MOCK:-$BUILD/mock-upstream}
export TOOLGATE_DEMO_LISTEN="${TOOLGATE_DEMO_LISTEN:-127.0.0.1:8090}"
BASE="http://$TOOLGATE_DEMO_LISTEN/v1"
tmp=$(mktemp -d)
logs=${DEMO_LOGDIR:-$tmp} # the processes' stderr (the test reads it)
mock_pid=""
tg_pid=""

cleanup() {
    [ -n "$tg_pid" ] && kill "$tg_pid" 2>/dev/null && wait "$tg_pid" 2>/dev/null
    [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null && wait "$mock_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo; echo "demo: stopped"; exit 0' INT TERM

# wait_for TEST...: up to 10 s for a condition (a start, never a timing check).
wait_for() {
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        [ "$i" -gt 100 ] && return 1
        sleep 0.1
    done
}

"$MOCK" --listen 127.0.0.1:0 >"$tmp/mock.out" 2>"$logs/mock.err" &
mock_pid=$!
wait_for grep -q '^port=' "$tmp/mock.out" || { echo "demo: the mock did not start" >&2; exit 1; }
export DEMO_MOCK_PORT="$(sed -n 's/^port=//p' "$tmp/mock.out")"
MOCK_URL="http://127.0.0.1:$DEMO_MOCK_PORT"

"$TG" serve -c conf/demo.conf >"$logs/toolgate.log" 2>&1 &
tg_pid=$!
if ! wait_for curl -sf "http://$TOOLGATE_DEMO_LISTEN/healthz"; then
    echo "demo: toolgate did not start on $TOOLGATE_DEMO_LISTEN (in use? set TOOLGATE_DEMO_LISTEN)" >&2
    cat "$logs/toolgate.log" >&2
    exit 1
fi

# The agent's request: what an OpenAI-SDK agent with an MCP tool sends.
cat >"$tmp/sent.json" <<'EOF'
{"model": "gemini-2.5-flash", "stream": true,
 "messages": [
  {"role": "system", "content": "You are a coding agent."},
  {"role": "user", "content": "The build is red: open an issue.",
   "_bookkeeping": {"turn": 1, "ui_id": "msg_7"}}],
 "tools": [{"type": "function", "function": {
  "name": "github:create_issue",
  "description": "Create an issue in a GitHub repository",
  "parameters": {"type": "object", "additionalProperties": false,
   "$defs": {"label": {"type": "string", "enum": ["bug", "ci", "docs"]}},
   "properties": {"repo": {"type": "string"}, "title": {"type": "string"},
    "labels": {"type": "array", "items": {"$ref": "#/$defs/label"}}},
   "anyOf": [{"required": ["repo"]}, {"required": ["title"]}]}}}]}
EOF

curl -sN -H 'Content-Type: application/json' --data-binary @"$tmp/sent.json" \
    "$BASE/chat/completions" >"$tmp/got.sse"
curl -s "$MOCK_URL/_last" >"$tmp/last.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); open(sys.argv[2],"w").write(j["body"]); print(j["path"])' \
    "$tmp/last.json" "$tmp/up.json" >"$tmp/up.path"
curl -sN -H 'Content-Type: application/json' --data-binary @"$tmp/up.json" \
    "$MOCK_URL$(cat "$tmp/up.path")" >"$tmp/raw.sse"
"$TG" rewrite -c conf/demo.conf --route demo "$tmp/sent.json" --explain 2>"$tmp/explain.txt" >/dev/null

python3 - "$tmp" <<'PY'
import json, os, re, sys
d = sys.argv[1]
tty = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
def c(code, s): return f"\033[{code}m{s}\033[0m" if tty else s
def head(s): print("\n" + c("1;36", "== " + s))
def j(v): return json.dumps(v, separators=(",", ":"))

def show_request(body):
    print(f"  model: {j(body['model'])}  stream: {j(body.get('stream'))}")
    for i, m in enumerate(body["messages"]):
        print(f"  messages[{i}]: {j(m)}")
    for i, t in enumerate(body.get("tools", [])):
        f = t["function"]
        print(f"  tools[{i}]: {f['name']}  parameters: {j(f.get('parameters'))}")

def events(path):
    out = []
    for line in open(path):
        if line.startswith("data: {"):
            out.append(json.loads(line[6:]))
    return out

def show_stream(ev):
    for e in ev:
        ch = e.get("choices") or [{}]
        fin = ch[0].get("finish_reason")
        print(f"  data: {j(ch[0].get('delta', {}))}" + (f"  finish_reason={fin}" if fin else ""))
    print("  data: [DONE]")

def calls(ev):
    out = []
    for e in ev:
        for tc in ((e.get("choices") or [{}])[0].get("delta") or {}).get("tool_calls") or []:
            out.append(tc)
    return out

sent = json.load(open(f"{d}/sent.json"))
up = json.load(open(f"{d}/up.json"))
raw, got = events(f"{d}/raw.sse"), events(f"{d}/got.sse")

print(c("1", "toolgate demo: one agent request through toolgate to a Gemini-like provider"))
print("(the project's mock, conf/demo.conf: it refuses what Gemini refuses and streams calls\n"
      " without index and type; the rules are in docs/dialects.md)")
head("1. the agent sent (POST /v1/chat/completions)")
show_request(sent)
head("2. toolgate sent upstream (the provider's record of it), each change by its rule")
show_request(up)
for line in open(f"{d}/explain.txt"):
    f = line.split(None, 3)  # stage, where, pointer, "rule  before -> after"
    if len(f) == 4 and " -> " in f[3]:
        m = re.match(r"(.*?)\s{2,}", f[3])
        rule = m.group(1) if m else f[3].split(" ", 1)[0]
        print("  " + c("33", f"{rule:<26}") + f" {f[2]}  ({f[1]})")
head("3. the provider answered (raw)")
show_stream(raw)
head("4. the agent received, each repair by its rule (docs/dialects.md section 5)")
show_stream(got)
rc, gc = calls(raw), calls(got)
for r, g in zip(rc, gc):
    rf, gf = r.get("function", {}), g.get("function", {})
    if "index" not in r and "index" in g:
        print("  " + c("33", f"{'R3 index added':<26}") + f" call {g.get('id')} came whole without an index -> index {g['index']}")
    if "type" not in r and "type" in g:
        print("  " + c("33", f"{'R1 type added':<26}") + f" call {g.get('id')} came without type -> {j(g['type'])}")
    if rf.get("name") != gf.get("name"):
        print("  " + c("33", f"{'rename-tool reversed':<26}") + f" {j(rf.get('name'))} -> {j(gf.get('name'))} (the agent's own name; section 7)")
    if (r.get("id") or "") != (g.get("id") or ""):
        print("  " + c("33", f"{'R8 id made':<26}") + f" {j(r.get('id'))} -> {j(g.get('id'))}")
PY

if [ "${DEMO_ONCE:-0}" = 1 ]; then
    exit 0
fi
cat <<EOF

== toolgate keeps running at $BASE (the mock behind it); Ctrl-C stops both.
  curl -sN $BASE/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"my:tool","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}'
  python3 -c 'from openai import OpenAI; print(OpenAI(base_url="$BASE", api_key="x").chat.completions.create(model="gemini-2.5-flash", messages=[{"role":"user","content":"hi"}]).choices[0].message)'
  $TG rewrite -c conf/demo.conf --route demo YOUR_REQUEST.json --explain   # any request, its changes
EOF
wait "$tg_pid"
