#!/bin/sh
# clients.sh -- real SDK clients (openai, Vercel AI SDK, OpenAI Agents SDK,
# LangChain) through toolgate.
#
# Starts the mock and toolgate, installs test/client's locked dependencies
# when node_modules is missing (npm ci), and runs node's test runner with
# its TAP reporter, whose top-level "ok N - name" lines test/run.sh counts.
. "$(dirname "$0")/lib.sh"

CLIENT="$TG_ROOT/test/client"
if ! command -v node >/dev/null 2>&1; then
    not_ok "node is installed" "the real-client tests need node >= 20 and npm"
    finish
fi
npm_ci "$CLIENT" || finish
[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }

start_mock
PORT=$(free_port)
CONF="$TG_TMP/clients.conf"
{
    conf_server "$PORT"
    conf_route main '*'
    for d in openai gemini mistral; do
        p=disc-$d
        [ $d = openai ] && p=disc
        printf '[route %s]\nprefix = /%s\nupstream = http://127.0.0.1:%s/v1\ndialect = %s\ndiscovery = on\n\n' \
            "$p" "$p" "$MOCK_PORT" "$d"
    done
    # one plain route per rewriting dialect, for agent loops (agent.test.mjs)
    for d in gemini mistral anthropic groq; do
        printf '[route %s]\nprefix = /%s\nupstream = http://127.0.0.1:%s/v1\ndialect = %s\n\n' \
            "$d" "$d" "$MOCK_PORT" "$d"
    done
    # openai routes that bridge /v1/responses over chat (the default, and
    # said) and that pass it through (responses.test.mjs)
    printf '[route rbridge]\nprefix = /rbridge\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nresponses = bridge\n\n' \
        "$MOCK_PORT"
    printf '[route rpass]\nprefix = /rpass\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nresponses = pass\n\n' \
        "$MOCK_PORT"
    # an anthropic route that bridges /v1/messages over chat (the anthropic
    # route above passes it through; messages.test.mjs)
    printf '[route abridge]\nprefix = /abridge\nupstream = http://127.0.0.1:%s/v1\ndialect = anthropic\nmessages = bridge\n\n' \
        "$MOCK_PORT"
    # a gemini route to the mock's strict Gemini validator (gemini.test.mjs)
    printf '[route gstrict]\nprefix = /gstrict\nupstream = http://127.0.0.1:%s/as/strict:gemini/v1\ndialect = gemini\n\n' \
        "$MOCK_PORT"
    printf '[route apass]\nprefix = /apass\nupstream = http://127.0.0.1:%s/v1\ndialect = anthropic\napi_key = route-key\n\n' \
        "$MOCK_PORT"
} >"$CONF"
start_toolgate "$CONF" || finish

# node numbers its own TAP lines; keep them as they are and let our own
# checks (sanitizers) follow under the same counter by continuing from its
# count.
TG_BASE_URL="$TG_URL/v1" TG_ROOT_URL="$TG_URL" TG_MOCK_URL="$MOCK_URL" node --test --test-reporter=tap "$CLIENT"/*${TG_CLIENT_ONLY:-}*.test.mjs >"$TG_TMP/node.tap" 2>&1
node_rc=$?
# node's own plan line is replaced by one for the whole suite at the end:
# node's count plus our own checks, so run.sh sees a run that stopped early
node_plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$TG_TMP/node.tap" | tail -n 1)
grep -v '^1\.\.[0-9][0-9]*$' "$TG_TMP/node.tap"
TAP_N=$(grep -c '^ok \|^not ok ' "$TG_TMP/node.tap")
node_ran=$TAP_N
[ -n "$node_plan" ] || not_ok "node --test printed its plan (1..N)" "$(tail -n 20 "$TG_TMP/node.tap")"
TAP_FAILED=$(grep -c '^not ok ' "$TG_TMP/node.tap")
if [ "$node_rc" != 0 ] && [ "$TAP_FAILED" = 0 ]; then
    not_ok "node --test exited $node_rc" "$(tail -n 20 "$TG_TMP/node.tap")"
fi
stop_toolgate
sanitizer_clean "mock upstream" "$TG_TMP/mock.err"
echo "1..$((${node_plan:-0} + TAP_N - node_ran))"
exit 0
