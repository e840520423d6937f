#!/bin/sh
# test/soak/run.sh [REQUESTS] -- the soak: REQUESTS (default 200000) mixed
# requests (JSON, streams, tool calls, upstream faults, bad input) through
# the ASan build of toolgate, in rounds; RSS is sampled after every round.
# Passes when toolgate answered them all, exits 0 on SIGTERM with no
# sanitizer or leak report, and its RSS after warm-up stays flat (the last
# sample within 20% + 8 MB of the one after the first round).
. "$(dirname "$0")/../integration/lib.sh"
total=${1:-200000}
# A small quarantine, so that RSS shows what toolgate keeps, not what ASan does.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:quarantine_size_mb=8:malloc_context_size=8"
start_mock
port=$(free_port)
conf="$TG_TMP/soak.conf"
{
    # a small item store, so that it fills and evicts within the first round
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 2\naccess_log = off\nlog_level = error\nresponses_store = 2M\nforward_headers = x-mock*\n\n' "$port"
    printf '[route gpt]\nmodels = gpt-*\nupstream = http://127.0.0.1:%s/v1\ndialect = groq\nretries = 1\n\n' "$MOCK_PORT"
    printf '[route gem]\nmodels = gem-*\nupstream = http://127.0.0.1:%s/v1\ndialect = gemini\n' "$MOCK_PORT"
} >"$conf"
start_toolgate "$conf" || exit 1
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$TG_PID/status"; }
done_n=0
round=0
first_rss=
echo "# rss at start: $(rss) kB"
while [ "$done_n" -lt "$total" ]; do
    round=$((round + 1))
    out=$(wrk -t2 -c32 -d10s -s "$(dirname "$0")/mix.lua" "$TG_URL" 2>&1 | grep '^soak:')
    n=$(echo "$out" | sed -n 's/^soak: \([0-9]*\) requests.*/\1/p')
    [ -n "$n" ] || { not_ok "soak round $round ran" "$out"; break; }
    done_n=$((done_n + n))
    r=$(rss)
    [ -z "$first_rss" ] && first_rss=$r
    echo "# round $round: $out; total $done_n; rss $r kB"
    kill -0 "$TG_PID" 2>/dev/null || { not_ok "toolgate alive after round $round"; break; }
done
last_rss=$(rss)
expect_eq "soak: toolgate served every round" 1 "$([ "$done_n" -ge "$total" ] && echo 1 || echo 0)"
limit=$((first_rss + first_rss / 5 + 8192))
if [ "$last_rss" -le "$limit" ]; then
    ok "soak: RSS flat after warm-up ($first_rss kB after round 1, $last_rss kB at the end, $done_n requests)"
else
    not_ok "soak: RSS flat after warm-up" "$first_rss kB after round 1, $last_rss kB at the end"
fi
code=$(chat "$TG_TMP/r" '{"model":"gpt-soak","messages":[{"role":"user","content":"hi"}]}')
expect_eq "soak: still answering afterwards" 200 "$code"
stop_toolgate
expect_eq "soak: exit 0 on SIGTERM" 0 "$TG_STATUS"
finish
