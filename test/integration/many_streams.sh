#!/bin/sh
# many_streams.sh -- with more streams open on one worker than
# RESUME_BATCH_MIN (256, proxy/request.c), resumes go to libmicrohttpd in
# batches: every stream still gets every event, none is left suspended.
# 600 streams on one thread, 4 chunks 100 ms apart, against the same
# streams straight from the mock (bench/streamer counts the events).
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
cc -O2 -o "$TG_TMP/streamer" "$TG_ROOT/bench/streamer.c" 2>"$TG_TMP/streamer.err" ||
    { not_ok "streamer builds" "$(cat "$TG_TMP/streamer.err")"; finish; }
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
N=600
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((N * 2 + 100)) ] || N=$(( ($(ulimit -n) - 100) / 2 ))
start_mock
PORT=$(free_port)
CONF="$TG_TMP/many_streams.conf"
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = warn\nforward_headers = x-mock*\nmax_conns_per_ip = 0\n\n' "$PORT"
    conf_route live '*'
} >"$CONF"
start_toolgate "$CONF" || finish
printf '{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}' >"$TG_TMP/sbody"

run() { # PORT -> streamer's line
    "$TG_TMP/streamer" -p "$1" -u /v1/chat/completions -b "$TG_TMP/sbody" -H 'X-Mock-Chunks: 4' \
        -H 'X-Mock-Delay-Ms: 100' -c "$N" -n "$N" -r 3000 -t 60
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
direct=$(run "$MOCK_PORT")
line=$(run "$PORT")
expect_eq "$N streams at once through one worker: all complete" "$N" "$(field "$line" ok)"
expect_eq "no stream failed" 0 "$(field "$line" failed)"
expect_eq "every event of every stream arrived (as many as straight from the mock)" \
    "$(field "$direct" events)" "$(field "$line" events)"
expect_eq "all $N were open at once (the batching was on)" "$N" "$(field "$line" peak_open)"
check "toolgate is still up" curl -sf -o /dev/null "http://127.0.0.1:$PORT/readyz"

finish
