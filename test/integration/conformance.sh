#!/bin/sh
# conformance.sh -- the imitated APIs' whole type surface, from the official
# SDKs' type definitions (test/conformance/, docs/conformance.md).
#
# test/conformance/run.mjs enumerates every request type and stream event
# the pinned SDKs declare (the TypeScript compiler API over their .d.ts),
# holds test/conformance/table.json against them (a type with no row fails,
# and so does a row for a type gone from the SDKs), checks that
# docs/conformance.md is the table as it is, then sends every row's request
# through toolgate on three routes to the mock's strict validators (an
# openai, a gemini and an anthropic dialect; the Messages API bridged on
# all three) and plays each answer fixture through each bridge, read with
# the SDKs' own stream helpers. Its TAP lines are this suite's; rows the
# table marks todo (a gap another change is closing) are TAP TODOs.
. "$(dirname "$0")/lib.sh"

DIR="$TG_ROOT/test/conformance"
agents_ready "$DIR"
start_mock

PORT=$(free_port)
CONF="$TG_TMP/conformance.conf"
{
    conf_server "$PORT"
    for r in oa:openai gm:gemini an:anthropic; do
        name=${r%%:*}
        d=${r#*:}
        printf '[route %s]\nprefix = /%s\nupstream = http://127.0.0.1:%s/as/strict:%s/v1\ndialect = %s\nmessages = bridge\nresponses = bridge\n\n' \
            "$name" "$name" "$MOCK_PORT" "$d" "$d"
    done
} >"$CONF"
start_toolgate "$CONF" || finish

TG_URL="$TG_URL" MOCK_URL="$MOCK_URL" \
TG_ROUTES="oa=gpt-4.1 gm=gemini-2.5-flash an=claude-sonnet-4-5" \
    node "$DIR/run.mjs" >"$TG_TMP/node.tap" 2>"$TG_TMP/node.err"
node_rc=$?
# run.mjs numbers its own lines; ours continue from its count, and one plan
# for the whole suite closes it
grep -v '^1\.\.[0-9]*$' "$TG_TMP/node.tap"
TAP_N=$(grep -c '^ok \|^not ok ' "$TG_TMP/node.tap")
TAP_FAILED=$(grep '^not ok ' "$TG_TMP/node.tap" | grep -vc '# TODO')
grep -q '^1\.\.[0-9]*$' "$TG_TMP/node.tap" ||
    not_ok "run.mjs ran to its end (printed its plan)" "$(tail -n 20 "$TG_TMP/node.err")"
if [ "$node_rc" != 0 ] && [ "$TAP_FAILED" = 0 ]; then
    not_ok "run.mjs exited $node_rc" "$(tail -n 20 "$TG_TMP/node.err")"
fi
stop_toolgate
finish
