#!/bin/sh
# bench/bystander.sh -- issue 28 F3 measured: a Redis that holds each reply
# DELAY_MS (default 150, under the store's 200 ms timeout; hostile_redis.py
# "slow" in front of Debian's redis-server), one toolgate worker, client A
# running a TURNS-turn previous_response_id chain (default 30) and client B
# asking every 50 ms on the same worker (bench/bystander.py). Prints B's
# worst wait. TG_BIN (default build/toolgate) picks the toolgate.
TG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export TG_ROOT
export TG_BIN="${TG_BIN:-$TG_ROOT/build/toolgate}"
export TG_MOCK="${TG_MOCK:-$TG_ROOT/build/mock-upstream}"
. "$TG_ROOT/test/integration/lib.sh"
DELAY=${DELAY_MS:-150}
TURNS=${TURNS:-30}
RP=$(free_port)
redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    >"$TG_TMP/redis.log" 2>&1 &
RPID=$!
trap 'kill $RPID 2>/dev/null; stop_all' EXIT
# lib.sh's start_script_upstream waits (60 s while it runs) for its port
start_script_upstream slow "$TG_ROOT/test/adversary/hostile_redis.py" slow - "$RP" "$DELAY"
SPID=$UP_PID
SP=$UP_PORT
trap 'kill $RPID $SPID 2>/dev/null; stop_all' EXIT
start_mock
PORT=$(free_port)
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = warn\naccess_log = off\n' "$PORT"
    printf 'responses_store = redis://127.0.0.1:%s/0\n\n' "$SP"
    conf_route main '*'
} >"$TG_TMP/bys.conf"
start_toolgate "$TG_TMP/bys.conf" || exit 1
echo "# $TG_BIN, Redis replies held $DELAY ms, $TURNS turns"
"$PY" "$TG_ROOT/bench/bystander.py" "$TG_URL" "$TURNS"
