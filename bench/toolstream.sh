#!/bin/sh
# bench/toolstream.sh -- how long toolgate holds a streamed tool call's
# arguments (issue 17, "tool calls must stream").
#
# The mock streams one call of get_weather whose arguments come in
# TS_PIECES fragments, TS_DELAY_MS apart (scenario parallel, X-Mock-Arg-Pieces).
# bench/streamer measures, per stream, the time from connect() to the first
# non-empty argument fragment (ttfa): straight from the mock (direct, when
# the upstream sent it) and through toolgate on two routes, dialect openai
# (identity rewrite: fragments are relayed as they come) and dialect vllm
# (held until the call is whole, the R4/R20/JSON-fix dialects). "added" is
# toolgate's ttfa minus direct's; events is what one stream reached the
# client as (the mock sends TS_PIECES + 4 events).
#
#   sh bench/toolstream.sh                    # BUILD=build
#   TG=/path/to/other/toolgate sh bench/toolstream.sh   # e.g. an older build
#
# Environment: BUILD (default build), TG, MOCK (binaries), TS_PIECES (20),
# TS_DELAY_MS (20), TS_STREAMS (20 per system), TS_CONC (4).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
TG=${TG:-$ROOT/$BUILD/toolgate}
MOCK=${MOCK:-$ROOT/$BUILD/mock-upstream}
PIECES=${TS_PIECES:-20}
DELAY=${TS_DELAY_MS:-20}
N=${TS_STREAMS:-20}
CONC=${TS_CONC:-4}

die() { echo "toolstream: $*" >&2; exit 1; }
[ -x "$TG" ] || die "no $TG"
[ -x "$MOCK" ] || die "no $MOCK"
TMP=$(mktemp -d /tmp/toolgate-toolstream.XXXXXX) || die mktemp
MOCK_PID= TG_PID=
cleanup() {
    for p in $TG_PID $MOCK_PID; do kill "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

cc -O2 -o "$TMP/streamer" bench/streamer.c || die "cannot build bench/streamer.c"

. bench/lib.sh
start_mock

TP=18790
while curl -s -o /dev/null -m 1 "http://127.0.0.1:$TP/"; [ $? -ne 7 ]; do TP=$((TP + 1)); done
cat > "$TMP/toolgate.conf" <<EOF
[server]
listen = 127.0.0.1:$TP
threads = 2
access_log = off
log_level = warn
forward_headers = x-mock*

[route held]
models = held-*
prefix = /held
upstream = http://127.0.0.1:$MP/v1
dialect = vllm

[route live]
models = *
upstream = http://127.0.0.1:$MP/v1
dialect = openai
EOF
"$TG" serve -c "$TMP/toolgate.conf" > "$TMP/tg.out" 2> "$TMP/tg.err" &
TG_PID=$!
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' -m 1 "http://127.0.0.1:$TP/readyz")" = 200 ]; do
    sleep 0.1; i=$((i + 1)); [ $i -gt 50 ] && die "toolgate did not start: $(cat "$TMP/tg.err")"
done

cat > "$TMP/body.json" <<'EOF'
{"model":"m","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],
 "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather",
  "parameters":{"type":"object","properties":{"location":{"type":"string"},"note":{"type":"string"}},
  "required":["location"]}}}]}
EOF

field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'; }
run() { # port path
    "$TMP/streamer" -p "$1" -u "$2" -b "$TMP/body.json" -H 'X-Mock: parallel' -H 'X-Mock-Calls: 1' \
        -H "X-Mock-Arg-Pieces: $PIECES" -H "X-Mock-Delay-Ms: $DELAY" -c "$CONC" -n "$N" -t 60
}
echo "toolstream: $N streams per system, $CONC at a time, one call, $PIECES argument fragments $DELAY ms apart"
echo "toolstream: toolgate $TG"
printf '%-22s %10s %10s %12s %8s %s\n' system ttfa_p50 ttfa_p99 added_p50 events ok/failed
d50=
for sys in direct toolgate-openai toolgate-vllm; do
    case $sys in
    direct) line=$(run "$MP" /v1/chat/completions) ;;
    toolgate-openai) line=$(run "$TP" /v1/chat/completions) ;;
    toolgate-vllm) line=$(run "$TP" /held/v1/chat/completions) ;;
    esac
    p50=$(field "$line" ttfa_p50); p99=$(field "$line" ttfa_p99)
    [ -n "$p50" ] || { echo "toolstream: $sys: no argument fragment seen: $line" >&2; p50=-; p99=-; }
    [ $sys = direct ] && d50=$p50
    added=$(awk -v a="$p50" -v b="$d50" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%d", a - b }')
    ev=$(awk -v e="$(field "$line" events)" -v n="$(field "$line" ok)" 'BEGIN { if (n > 0) printf "%.1f", e / n; else print "-" }')
    printf '%-22s %10s %10s %12s %8s %s\n' "$sys" "$p50" "$p99" "$added" "$ev" "$(field "$line" ok)/$(field "$line" failed)"
done
echo "toolstream: times in µs from connect() to the first non-empty argument fragment; events per stream"
