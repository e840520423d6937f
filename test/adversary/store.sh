#!/bin/sh
# store.sh -- a hostile Redis behind responses_store (issue 28 F2, F3),
# one worker, so a request that waits on Redis and a bystander share it:
#   - a Redis that answers "*999999999" and then elements without end: the
#     reference is a 503 store_unavailable, toolgate's peak RSS stays within
#     a bound, the worker serves the next request (before: it stopped
#     answering and grew ~160 MB/s);
#   - a Redis that drips its answer a byte every 100 ms (never silent long
#     enough for a read timeout): a bystander on the same worker is answered
#     while the request that waits on Redis still waits, which is answered
#     503 at its store budget (before: the worker froze for the whole drip).
#   - a Redis named by a host whose lookup hangs (test/adversary/slow_dns.c,
#     preloaded): a bystander is answered while the lookup hangs, and the
#     request that needs the store is a 503 at once; once the lookup ends,
#     the store connects to the address it found (before: hiredis' connect
#     looked the name up on the worker, which froze until DNS answered).
# Orders, not times: the bystander's answer comes before the waiting one.
# hostile_redis.py's "slow" mode is the bench's (bench/bystander.sh).
. "$(dirname "$0")/../integration/lib.sh"

HR="$TG_ROOT/test/adversary/hostile_redis.py"
start_mock
HR_PID=
trap '_st=$?; [ -n "$HR_PID" ] && kill $HR_PID 2>/dev/null; (exit $_st); stop_all' EXIT

# hostile MODE: a hostile Redis (HR_PORT), commands marked in $TG_TMP/redis.mark
hostile() {
    [ -n "$HR_PID" ] && kill $HR_PID 2>/dev/null
    rm -f "$TG_TMP/redis.mark" "$TG_TMP/hr.out"
    "$PY" "$HR" "$1" "$TG_TMP/redis.mark" >"$TG_TMP/hr.out" 2>"$TG_TMP/hr.err" &
    HR_PID=$!
    _i=0
    HR_PORT=
    while [ $_i -lt 100 ] && [ -z "$HR_PORT" ]; do
        sleep 0.05
        HR_PORT=$(sed -n 's/^port=\([0-9]*\)$/\1/p' "$TG_TMP/hr.out")
        _i=$((_i + 1))
    done
    [ -n "$HR_PORT" ] || { not_ok "hostile Redis ($1) starts" "$(cat "$TG_TMP/hr.err")"; exit 1; }
    [ -n "$TG_PID" ] && stop_toolgate
    PORT=$(free_port)
    {
        printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = warn\n' "$PORT"
        printf 'responses_store = redis://127.0.0.1:%s/0\n\n' "$HR_PORT"
        conf_route main '*'
    } >"$TG_TMP/store.$1.conf"
    start_toolgate "$TG_TMP/store.$1.conf" || exit 1
}

REF='{"model":"gpt-4o","input":[{"type":"item_reference","id":"msg_0_anyitem0000000000000000000"},{"role":"user","content":"and then?"}]}'
hwm_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$TG_PID/status"; }

# ---- F2: an array header of a billion elements, then elements without end -----
hostile huge
base=$(hwm_kb)
code=$(tg_req "$TG_TMP/f2" POST /v1/responses -H 'Content-Type: application/json' --data-binary "$REF")
expect_eq "F2: a Redis announcing *999999999: the reference is a 503 store_unavailable" \
    "503 store_unavailable" "$code $(json_get "$TG_TMP/f2" error.code)"
code=$(chat "$TG_TMP/f2b" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
expect_eq "F2: the worker serves the next request" 200 "$code"
grow=$((($(hwm_kb) - base) / 1024))
echo "# F2: peak RSS grew $grow MB"
if [ "$grow" -le 64 ]; then ok "F2: peak RSS within 64 MB of before ($grow MB)"; else
    not_ok "F2: peak RSS within 64 MB of before" "grew $grow MB"; fi
expect_match "F2: the dropped connection is logged" 'responses_store redis' "$(cat "$TG_LOG")"

# ---- F3: a Redis that drips its answer: a bystander is not held -----------------
hostile drip
rm -f "$TG_TMP/a.done"
(tg_req "$TG_TMP/f3a" POST /v1/responses -H 'Content-Type: application/json' --data-binary "$REF" \
    >"$TG_TMP/f3a.code"; touch "$TG_TMP/a.done") &
A_PID=$!
_i=0
while [ $_i -lt 200 ] && [ ! -s "$TG_TMP/redis.mark" ]; do sleep 0.05; _i=$((_i + 1)); done
expect_eq "F3: the request reached the dripping Redis" 1 "$([ -s "$TG_TMP/redis.mark" ] && echo 1)"
code=$(chat "$TG_TMP/f3b" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
a_done=$([ -e "$TG_TMP/a.done" ] && echo "done" || echo "still waiting")
expect_eq "F3: a bystander on the same worker is answered while that request waits on Redis" \
    "200 still waiting" "$code $a_done"
wait $A_PID
expect_eq "F3: the waiting request ends at its store budget: 503 store_unavailable" \
    "503 store_unavailable" "$(cat "$TG_TMP/f3a.code") $(json_get "$TG_TMP/f3a" error.code)"

# ---- a host name whose lookup hangs: looked up off the worker ------------------
if cc -shared -fPIC -o "$TG_TMP/slow_dns.so" "$TG_ROOT/test/adversary/slow_dns.c" -ldl \
    2>"$TG_TMP/slow_dns.err"; then
    hostile drip
    stop_toolgate
    rm -f "$TG_TMP/redis.mark" "$TG_TMP/dns.asked" "$TG_TMP/dns.open"
    PORT=$(free_port)
    {
        printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = warn\n' "$PORT"
        printf 'responses_store = redis://redis.slow.test:%s/0\n\n' "$HR_PORT"
        conf_route main '*'
    } >"$TG_TMP/store.dns.conf"
    export TG_SLOW_DNS_HOST=redis.slow.test TG_SLOW_DNS_GATE="$TG_TMP/dns.open" \
        TG_SLOW_DNS_MARK="$TG_TMP/dns.asked"
    _asan=$ASAN_OPTIONS
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
    export LD_PRELOAD="$TG_TMP/slow_dns.so"
    start_toolgate "$TG_TMP/store.dns.conf" || exit 1
    unset LD_PRELOAD
    export ASAN_OPTIONS="$_asan"
    (tg_req "$TG_TMP/dnsa" POST /v1/responses -H 'Content-Type: application/json' \
        --data-binary "$REF" >"$TG_TMP/dnsa.code") &
    A_PID=$!
    _i=0
    while [ $_i -lt 200 ] && [ ! -s "$TG_TMP/dns.asked" ]; do sleep 0.05; _i=$((_i + 1)); done
    expect_eq "DNS: the store's host name is being looked up" 1 "$([ -s "$TG_TMP/dns.asked" ] && echo 1)"
    code=$(chat "$TG_TMP/dnsb" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
    expect_eq "DNS: a bystander on the same worker is answered while the lookup hangs" 200 "$code"
    touch "$TG_TMP/dns.open"
    wait $A_PID
    expect_eq "DNS: the request that needs the store: 503 store_unavailable" \
        "503 store_unavailable" "$(cat "$TG_TMP/dnsa.code") $(json_get "$TG_TMP/dnsa" error.code)"
    _i=0
    while [ $_i -lt 20 ] && [ ! -s "$TG_TMP/redis.mark" ]; do
        tg_req "$TG_TMP/dnsc" POST /v1/responses -H 'Content-Type: application/json' \
            --data-binary "$REF" >/dev/null
        _i=$((_i + 1))
    done
    expect_eq "DNS: once the lookup ends, the store connects to the address it found" 1 \
        "$([ -s "$TG_TMP/redis.mark" ] && echo 1)"
    unset TG_SLOW_DNS_HOST TG_SLOW_DNS_GATE TG_SLOW_DNS_MARK
else
    not_ok "the lookup shim builds" "$(cat "$TG_TMP/slow_dns.err")"
fi

stop_toolgate
finish
