#!/bin/sh
# budget.sh -- rule 62 (docs/dialects.md): a request whose tool schemas
# multiply when $ref is inlined is served degraded, never refused (OpenAI
# accepts it): each tool gets its share of the budget and the deepest
# inlining that fits it, the refs past it stand in as described JSON
# strings, and the answer says so (X-Toolgate-Degraded, the access log,
# toolgate_schema_budget_standins_total), in bounded memory. Two catalogs:
# bench/schema_bomb.py (100 tools, about 300 KB, $defs chains that meet
# anyOf: once a 138 MB body, 20 s of one worker, 1.5 GB of RSS) and
# bench/graph_catalog.py, shaped like the Microsoft 365 MCP server's
# Graph-generated tools (issue 27's held-out case: 529 KB that inlined to
# 5.29 MB, refused with schema_too_large until 2026-12), on gemini and
# vertex. A route that keeps $ref (openai) forwards the tools as they came.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock
PORT=$(free_port)
CONF="$TG_TMP/budget.conf"
{
    conf_server "$PORT"
    printf '[route vertex]\nmodels = vertex-*\nupstream = http://127.0.0.1:%s/v1\ndialect = vertex\ndiscovery = off\n\n' "$MOCK_PORT"
    printf '[route gemini]\nmodels = gemini-*\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\ndiscovery = off\n\n' "$MOCK_PORT"
    printf '[route openai]\nmodels = gpt-*\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\ndiscovery = off\n\n' "$MOCK_PORT"
} >"$CONF"
start_toolgate "$CONF" || finish

BOMB="$TG_TMP/bomb.json"
"$PY" "$TG_ROOT/bench/schema_bomb.py" 100 9 >"$BOMB"

# up_tools FILE: the bytes and the stand-ins of the tools the mock got
up_tools() {
    mock_last "$1"
    "$PY" -c 'import json,sys
b = json.load(open(sys.argv[1]))
b = b.get("body", b)
if isinstance(b, str):
    b = json.loads(b)
s = json.dumps(b.get("tools", []), separators=(",", ":"))
print(len(s), s.count("schema budget"))' "$1"
}

# no timed assertion: an ASan build on a loaded machine takes many seconds
code=$(chat "$TG_TMP/r1" "@$BOMB" -m 600)
expect_eq "amplifying schemas: served (200), not refused" 200 "$code"
expect_match "X-Toolgate-Degraded says so" "^schema-budget; standins=[1-9][0-9]*$" \
    "$(header_value "$TG_TMP/r1.h" X-Toolgate-Degraded)"
expect_eq "it went upstream once" 1 "$(mock_count)"
set -- $(up_tools "$TG_TMP/up1")
in=$(wc -c <"$BOMB")
if [ "$1" -le $((in * 10 + 1048576)) ] && [ "$2" -gt 0 ]; then
    ok "the upstream tools stay in the budget ($1 bytes from $in, $2 stand-ins)"
else
    not_ok "the upstream tools stay in the budget" "$1 bytes from $in, $2 stand-ins"
fi
hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$TG_PID/status")
if [ -n "$hwm" ] && [ "$hwm" -lt 786432 ]; then ok "peak RSS ${hwm} kB (< 768 MB, ASan build)"; else not_ok "peak RSS ${hwm} kB (< 768 MB, ASan build)"; fi

for d in gemini vertex; do
    "$PY" "$TG_ROOT/bench/graph_catalog.py" 60 "$d-2.5-flash" >"$TG_TMP/graph-$d.json"
    mock_reset
    code=$(chat "$TG_TMP/g-$d" "@$TG_TMP/graph-$d.json" -m 600)
    expect_eq "$d: the Graph-shaped catalog (about 400 KB, tenfold when inlined) is served" 200 "$code"
    expect_match "$d: X-Toolgate-Degraded" "^schema-budget; standins=[1-9]" \
        "$(header_value "$TG_TMP/g-$d.h" X-Toolgate-Degraded)"
    set -- $(up_tools "$TG_TMP/upg-$d")
    in=$(wc -c <"$TG_TMP/graph-$d.json")
    if [ "$1" -le $((in * 10)) ] && [ "$1" -gt "$in" ]; then
        ok "$d: tools inlined within the budget ($1 bytes from $in, $2 stand-ins)"
    else
        not_ok "$d: tools inlined within the budget" "$1 bytes from $in, $2 stand-ins"
    fi
done
curl -s -m 5 "$TG_URL/metrics" >"$TG_TMP/metrics"
expect_match "toolgate_schema_budget_standins_total counts them" \
    "toolgate_schema_budget_standins_total [1-9]" "$(cat "$TG_TMP/metrics")"

code=$(chat "$TG_TMP/r2" '{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}')
expect_eq "the next request is served" 200 "$code"
expect_eq "and says nothing of a budget" "" "$(header_value "$TG_TMP/r2.h" X-Toolgate-Degraded)"

sed 's/"gemini-2.5-flash"/"gpt-4o"/' "$BOMB" >"$TG_TMP/bomb-openai.json"
code=$(chat "$TG_TMP/r3" "@$TG_TMP/bomb-openai.json" -m 600)
expect_eq "a route that keeps \$ref forwards the same tools" 200 "$code"
expect_eq "undegraded" "" "$(header_value "$TG_TMP/r3.h" X-Toolgate-Degraded)"

stop_toolgate
finish
