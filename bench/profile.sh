#!/bin/sh
# bench/profile.sh -- instructions per request of one bench row, counted by
# callgrind (issue 20). Wall-clock requests/s move with the load of a shared
# machine; an instruction count does not, so this is how two builds are
# compared here.
#
# Starts the mock, a static nginx serving the bench's tool-call stream (the
# mock's one call in 20 argument fragments, captured once, as bench/run.sh
# does) and its small JSON answer, and toolgate under
# `valgrind --tool=callgrind` (threads = 1). wrk warms it up, the counters
# are zeroed (callgrind_control -z), wrk runs PF_SECONDS more, and the count
# since the zero is divided by the requests wrk completed (wrk's own count
# plus the few it left in flight: the difference is below 1% at the
# default settings).
#
#   sh bench/profile.sh                  # toolcall row, BUILD=build
#   PF_ROW=stream sh bench/profile.sh    # toolcall | toolcall-gemini | stream | small | big100
#   TG=/other/toolgate sh bench/profile.sh
#
# PF_TOOL=strace counts system calls per request instead (strace -c -f);
# strace slows every call, which changes the pattern (the upstream has
# always answered by the time curl looks right after sending). PF_TOOL=perf
# counts them with the kernel's syscall tracepoints (perf stat -p, no
# slowdown) over the measured run only, and adds toolgate's user and
# system CPU per request (/proc/PID/stat). PF_TOOL=none runs toolgate as it
# is (PF_PAUSE=S keeps it up S seconds after the load, PF_KEEP=1 keeps the
# temp dir).
#
# Prints `row=... requests=... instructions=... per_request=...` and keeps
# the callgrind file (PF_OUT, default /tmp/toolgate-profile.<row>.cg) for
# callgrind_annotate. Environment: BUILD, TG, MOCK, PF_ROW, PF_SECONDS (10),
# PF_CONNS (4), TG_SHARED (../shared: big100 posts its
# corpus/requests/big-100.json, an agent's 184 KB request, to the JSON
# upstream).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
TG=${TG:-$ROOT/$BUILD/toolgate}
MOCK=${MOCK:-$ROOT/$BUILD/mock-upstream}
ROW=${PF_ROW:-toolcall}
SECS=${PF_SECONDS:-10}
CONNS=${PF_CONNS:-4}
TOOL=${PF_TOOL:-callgrind}
OUT=${PF_OUT:-/tmp/toolgate-profile.$ROW.$TOOL}

die() { echo "profile: $*" >&2; exit 1; }
for t in wrk nginx curl; do
    command -v $t > /dev/null || die "needs $t"
done
case $TOOL in
callgrind) for t in valgrind callgrind_control; do command -v $t > /dev/null || die "needs $t"; done ;;
strace) command -v strace > /dev/null || die "needs strace" ;;
perf) command -v perf > /dev/null || die "needs perf (Debian: linux-perf)" ;;
none) ;;
*) die "PF_TOOL is callgrind, strace, perf or none" ;;
esac
[ -x "$TG" ] || die "no $TG"
[ -x "$MOCK" ] || die "no $MOCK"
TMP=$(mktemp -d /tmp/toolgate-profile.XXXXXX) || die mktemp
chmod 755 "$TMP" # nginx workers run as nobody
MOCK_PID= NGX_PID= TG_PID= PERF_PID=
cleanup() {
    for p in $PERF_PID $TG_PID $NGX_PID $MOCK_PID; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "${PF_KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

. bench/lib.sh

start_mock

printf '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}' > "$TMP/small.json"
printf '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello."}]}' > "$TMP/stream.json"
printf '%s' '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"note":{"type":"string"}},"required":["location"]}}}]}' > "$TMP/toolstream.json"

mkdir -p "$TMP/static/logs"
ANSWER=$(curl -s -H 'Content-Type: application/json' --data-binary @"$TMP/small.json" \
    "http://127.0.0.1:$MP/v1/chat/completions")
case $ANSWER in *chat.completion*) ;; *) die "mock answered: $ANSWER" ;; esac
capture_toolcall "$TMP/toolstream.json" "$TMP/static/tcs.sse"
SP=$(free_port 18900)
static_nginx_conf 1 > "$TMP/static/nginx.conf"
nginx -p "$TMP/static" -c "$TMP/static/nginx.conf" > "$TMP/static/logs/stdout" 2>&1 &
NGX_PID=$!
wait_http "http://127.0.0.1:$SP/" || die "nginx did not start"

TP=$(free_port 18950)
cat > "$TMP/toolgate.conf" <<EOF
[server]
listen = 127.0.0.1:$TP
threads = 1
access_log = off
log_level = warn
max_conns_per_ip = 0

EOF
stream_routes >> "$TMP/toolgate.conf"
# `serve` sets glibc's tcache count itself by executing itself again
# (proxy/main.c), which it skips under valgrind: the same value here, so
# that callgrind counts the allocator a served toolgate runs.
case ${GLIBC_TUNABLES:-} in
*glibc.malloc.tcache_count=*) TUNE=$GLIBC_TUNABLES ;;
*) TUNE=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.tcache_count=128 ;;
esac
if [ "$TOOL" = none ] || [ "$TOOL" = perf ]; then
    env GLIBC_TUNABLES="$TUNE" "$TG" serve -c "$TMP/toolgate.conf" > "$TMP/tg.out" 2> "$TMP/tg.err" &
elif [ "$TOOL" = strace ]; then
    env GLIBC_TUNABLES="$TUNE" strace -f -c -o "$OUT" "$TG" serve -c "$TMP/toolgate.conf" > "$TMP/tg.out" 2> "$TMP/tg.err" &
else
    env GLIBC_TUNABLES="$TUNE" valgrind --tool=callgrind --callgrind-out-file="$OUT" \
        "$TG" serve -c "$TMP/toolgate.conf" > "$TMP/tg.out" 2> "$TMP/tg.err" &
fi
TG_PID=$!
wait_http "http://127.0.0.1:$TP/readyz" 300 || die "toolgate did not start: $(tail -5 "$TMP/tg.err")"

case $ROW in
toolcall) BODY=$TMP/toolstream.json URL=http://127.0.0.1:$TP/tcs/v1/chat/completions ;;
toolcall-gemini) BODY=$TMP/toolstream.json URL=http://127.0.0.1:$TP/gtcs/v1/chat/completions ;;
stream) BODY=$TMP/stream.json URL=http://127.0.0.1:$TP/sse/v1/chat/completions ;;
small) BODY=$TMP/small.json URL=http://127.0.0.1:$TP/v1/chat/completions ;;
big100) BODY=${TG_SHARED:-$ROOT/../shared}/corpus/requests/big-100.json
    URL=http://127.0.0.1:$TP/v1/chat/completions
    [ -r "$BODY" ] || die "no $BODY (set TG_SHARED)" ;;
*) die "PF_ROW is toolcall, toolcall-gemini, stream, small or big100" ;;
esac
export BODY
wrk -t1 -c"$CONNS" -d3s --timeout 10s -s bench/post.lua "$URL" > "$TMP/warm.out" 2>&1 < /dev/null
if [ "$TOOL" != callgrind ]; then
    W=$(sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p' "$TMP/warm.out")
else
    W=0
    callgrind_control -z "$TG_PID" > /dev/null 2>&1 || die "callgrind_control -z"
fi
# utime + stime of a process, in clock ticks (fields 14, 15 of its stat)
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12, $13 }'; }
if [ "$TOOL" = perf ]; then
    EV=raw_syscalls:sys_enter
    for c in recvfrom sendto sendmsg poll epoll_wait epoll_ctl read write writev; do
        EV="$EV,syscalls:sys_enter_$c"
    done
    perf stat -x, -e "$EV" -o "$OUT" -p "$TG_PID" 2> "$TMP/perf.err" &
    PERF_PID=$!
    sleep 0.2
    kill -0 "$PERF_PID" 2>/dev/null || die "perf stat: $(cat "$TMP/perf.err")"
    T0=$(cpu_ticks "$TG_PID")
fi
wrk -t1 -c"$CONNS" -d"${SECS}s" --timeout 10s -s bench/post.lua "$URL" > "$TMP/wrk.out" 2>&1 < /dev/null
if [ "$TOOL" = perf ]; then
    T1=$(cpu_ticks "$TG_PID")
    kill -INT "$PERF_PID"
    wait "$PERF_PID" 2>/dev/null
fi
[ -n "${PF_PAUSE:-}" ] && sleep "$PF_PAUSE"
sleep 1 # the requests wrk left in flight finish
RES=$(grep '^RESULT' "$TMP/wrk.out") || die "wrk: $(cat "$TMP/wrk.out")"
if [ "$TOOL" = strace ]; then
    kill -TERM "$(pgrep -P "$TG_PID" toolgate)"
else
    kill -TERM "$TG_PID"
fi
wait "$TG_PID" 2>/dev/null
TG_PID=
N=$(echo "$RES" | sed 's/.*requests=\([0-9]*\).*/\1/')
E=$(echo "$RES" | sed 's/.*errors=\([0-9]*\) non2xx=\([0-9]*\).*/\1+\2/')
[ "$E" = "0+0" ] || die "wrk saw errors: $RES"
[ "$N" -gt 0 ] || die "no requests: $RES"
if [ "$TOOL" = none ]; then
    echo "row=$ROW $RES"
    exit 0
elif [ "$TOOL" = perf ]; then
    # the counts and ticks span wrk's run (plus its start and the requests
    # it left in flight: below 1% at the default settings)
    echo "row=$ROW requests=$N system calls per request (all = every kind):"
    awk -F, -v n="$N" '$1 ~ /^[0-9]+$/ { k = $3; sub(/.*:sys_enter_?/, "", k);
        printf "%8.2f %s\n", $1 / n, k == "" ? "all" : k }' "$OUT"
    HZ=$(getconf CLK_TCK)
    echo "$T0 $T1" | awk -v n="$N" -v hz="$HZ" '{ printf "CPU per request: user %.1f us, system %.1f us\n",
        ($3 - $1) * 1e6 / hz / n, ($4 - $2) * 1e6 / hz / n }'
    exit 0
elif [ "$TOOL" = strace ]; then
    N=$((N + W))
    echo "row=$ROW requests=$N (warm-up included) system calls per request:"
    awk -v n=$N '$1 ~ /^[0-9.]+$/ && NF >= 5 { c = $4; printf "%8.2f %s\n", c / n, $NF }' "$OUT"
    exit 0
fi
# The count after the zero is the last "summary:" or "totals:" line of the
# part dumped at exit.
IR=$(grep -E '^(summary|totals):' "$OUT" | tail -1 | awk '{ print $2 }')
echo "row=$ROW requests=$N instructions=$IR per_request=$((IR / N)) out=$OUT"
