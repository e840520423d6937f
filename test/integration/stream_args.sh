#!/bin/sh
# stream_args.sh -- a streamed tool call's arguments reach the agent as they
# come on an openai route (repair.stream_args), and whole on a vllm route,
# through the real server; the arguments the agent assembles are the same.
# The mock streams one call whose arguments come in 10 fragments 40 ms
# apart (scenario parallel, X-Mock-Arg-Pieces).
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock
PORT=$(free_port)
CONF="$TG_TMP/stream_args.conf"
{
    conf_server "$PORT"
    printf '[route held]\nmodels = held-*\nprefix = /held\nupstream = http://127.0.0.1:%s/v1\ndialect = vllm\n\n' "$MOCK_PORT"
    conf_route live '*'
} >"$CONF"
start_toolgate "$CONF" || finish

BODY='{"model":"m","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],
"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
"properties":{"location":{"type":"string"},"note":{"type":"string"}},"required":["location"]}}}]}'

# fragments FILE: "N FIRST_MS LAST_MS ARGS" -- events carrying a non-empty
# argument fragment, when the first and the last came, the arguments joined.
fragments() {
    "$PY" - "$1" <<'EOF'
import json, sys
n, first, last, args = 0, -1, -1, ""
for line in open(sys.argv[1]):
    ms, data = line.split(" ", 1)
    data = data[5:].strip()
    if data == "[DONE]":
        continue
    for ch in json.loads(data).get("choices", []):
        for tc in ch.get("delta", {}).get("tool_calls", []):
            a = tc.get("function", {}).get("arguments", "")
            if a:
                n += 1
                first = int(ms) if first < 0 else first
                last = int(ms)
                args += a
print(n, first, last, json.dumps(json.loads(args), sort_keys=True, separators=(",", ":")) if args else "-")
EOF
}

for route in live held; do
    path=/v1/chat/completions
    [ $route = held ] && path=/held/v1/chat/completions
    stream_times "$TG_TMP/$route.out" "$TG_URL$path" "$BODY" -H 'X-Mock: parallel' -H 'X-Mock-Calls: 1' \
        -H 'X-Mock-Arg-Pieces: 10' -H 'X-Mock-Delay-Ms: 40'
    set -- $(fragments "$TG_TMP/$route.out")
    eval "${route}_n=\$1 ${route}_first=\$2 ${route}_last=\$3 ${route}_args=\$4"
done

if [ "$live_n" -ge 10 ] && [ $((live_last - live_first)) -ge 200 ]; then
    ok "openai route: the arguments come in $live_n events, as upstream sends them"
else
    not_ok "openai route: the arguments come as upstream sends them" \
        "$live_n events with arguments, first at $live_first ms, last at $live_last ms
$(cat "$TG_TMP/live.out")"
fi
expect_eq "vllm route: the call is held until whole (one event with arguments)" 1 "$held_n"
if [ "$live_args" != - ] && [ "$live_args" = "$held_args" ]; then
    ok "the agent assembles the same arguments on both routes"
else
    not_ok "the agent assembles the same arguments on both routes" "live: $live_args
held: $held_args"
fi
stop_toolgate
finish
