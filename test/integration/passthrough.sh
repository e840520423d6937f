#!/bin/sh
# passthrough.sh -- a stream that toolgate passes through (Anthropic's
# /v1/messages on an anthropic route, /v1/responses with responses = pass,
# any other /v1 path) reaches the client as the provider sends it: event by
# event, byte for byte, and a stream the provider cuts ends with an error
# event in its API's shape. Before, such a stream was collected whole and
# reached the client at its end (Claude Code on an anthropic route saw
# nothing until the model was done).
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock
PORT=$(free_port)
CONF="$TG_TMP/passthrough.conf"
{
    conf_server "$PORT"
    printf '[route apass]\nprefix = /apass\nupstream = http://127.0.0.1:%s/v1\ndialect = anthropic\napi_key = route-key\n\n' "$MOCK_PORT"
    printf '[route aslow]\nprefix = /aslow\nupstream = http://127.0.0.1:%s/v1\ndialect = anthropic\napi_key = route-key\nttfb_timeout = 5s\nidle_timeout = 1s\n\n' "$MOCK_PORT"
    printf '[route rpass]\nprefix = /rpass\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nresponses = pass\n\n' "$MOCK_PORT"
    conf_route live '*'
} >"$CONF"
start_toolgate "$CONF" || finish

# Five Anthropic events, 300 ms apart at the mock.
for i in 1 2 3 4 5; do
    printf 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"part %s"}}\n\n' "$i"
done >"$TG_TMP/msgs.sse"
printf 'event: message_stop\ndata: {"type":"message_stop"}\n\n' >>"$TG_TMP/msgs.sse"

# live OUT PATH BODY FIXTURE: the stream through toolgate, each line stamped
# with the ms since the request left.
live() {
    stream_times "$1" "$TG_URL$2" "$3" -H 'X-Mock: fixture' -H "X-Mock-Fixture: $4" \
        -H 'X-Mock-Delay-Ms: 300'
}

MBODY='{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
live "$TG_TMP/m.out" /apass/v1/messages "$MBODY" "$TG_TMP/msgs.sse"
check "Messages passed through: the first event arrives long before the last (live, not collected)" "$PY" -c '
import sys
ms = [int(l.split(" ", 1)[0]) for l in open(sys.argv[1]) if " data: " in l or l.split(" ", 1)[1].startswith("data:")]
assert len(ms) == 6, ms
assert ms[-1] - ms[0] >= 1000, ms' "$TG_TMP/m.out"

curl -s -N -m 10 -H 'Content-Type: application/json' -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/msgs.sse" \
    --data-binary "$MBODY" "$TG_URL/apass/v1/messages" -D "$TG_TMP/m.hdr" >"$TG_TMP/m.raw"
check "Messages passed through: the bytes are the provider's, unchanged" cmp "$TG_TMP/msgs.sse" "$TG_TMP/m.raw"
expect_match "Messages passed through: Content-Type text/event-stream" "[Cc]ontent-[Tt]ype: text/event-stream" "$(cat "$TG_TMP/m.hdr")"

# The Responses API passed through (responses = pass): the same.
for i in 1 2 3; do
    printf 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":%s,"delta":"p%s"}\n\n' "$i" "$i"
done >"$TG_TMP/resp.sse"
RBODY='{"model":"gpt-5","stream":true,"input":"hi"}'
live "$TG_TMP/r.out" /rpass/v1/responses "$RBODY" "$TG_TMP/resp.sse"
check "Responses passed through: live, event by event" "$PY" -c '
import sys
ms = [int(l.split(" ", 1)[0]) for l in open(sys.argv[1])]
assert len(ms) == 3 and ms[-1] - ms[0] >= 500, ms' "$TG_TMP/r.out"

# A passed-through stream that stops in the middle (past the route's
# idle_timeout): what came goes out, then the API's error event, here
# Anthropic's shape on /v1/messages.
curl -s -N -m 10 -H 'Content-Type: application/json' -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/msgs.sse" \
    -H 'X-Mock-Delay-Ms: 1600' --data-binary "$MBODY" "$TG_URL/aslow/v1/messages" >"$TG_TMP/cut.out"
check "a passed-through stream cut by idle_timeout ends with an Anthropic error event" "$PY" -c '
import json, sys
lines = open(sys.argv[1]).read().split("\n\n")
ev = [b for b in lines if b.strip()]
assert ev and ev[-1].startswith("event: error\ndata: "), ev
e = json.loads(ev[-1].split("data: ", 1)[1])
assert e["type"] == "error" and e["error"]["type"] == "api_error" and "timed out" in e["error"]["message"], e
assert "part 1" in open(sys.argv[1]).read(), ev' "$TG_TMP/cut.out"
check "a chat stream through the same server is still repaired (not passed raw)" sh -c '
curl -s -N -m 10 -H "Content-Type: application/json" --data-binary "{\"model\":\"gpt-4o\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" "$1/v1/chat/completions" | grep -q "data: \[DONE\]"' sh "$TG_URL"

finish
