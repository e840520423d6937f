#!/bin/sh
# bench/run.sh -- toolgate's side-by-side benchmark (issue #7). `make bench`.
#
# One run, the same upstreams for all, the systems measured one after the
# other on every body:
#   direct    wrk/streamer -> upstream                  (the floor)
#   nginx     wrk/streamer -> nginx -> upstream         (plain reverse proxy)
#   portkey   wrk/streamer -> Portkey AI gateway -> upstream (a real peer:
#             npm @portkey-ai/gateway, pinned in bench/package-lock.json,
#             installed with npm ci; an OpenAI pass-through to the same
#             upstreams; on small, big100, stream and the stream tests)
#   toolgate  wrk/streamer -> toolgate -> upstream
# Upstreams: streams (path /sse/...) go to the project's mock
# (test/mock/mock_upstream.c: chunk count and delay per request). JSON answers
# come by default from a second nginx that answers `return 200 '<the mock's
# chat.completion>'` and discards the body unparsed: the mock parses and
# re-serialises every body (its /_last record), which costs it tens of ms on
# big-400 and would hide the proxies' own cost. BENCH_JSON_UPSTREAM=mock
# sends the JSON bodies to the mock instead.
# Every figure is printed next to toolgate's ratio to the two others, so
# the noise of a shared machine hits all three alike. Writes bench/RESULTS.md.
#
# Environment: BUILD (default build) for $BUILD/toolgate and $BUILD/mock-upstream;
# TG_SHARED (default ../shared) for corpus/requests/big-*.json; BENCH_DURATION
# (s per wrk run, default 5); BENCH_REPS (interleaved repetitions of the
# 64-connection runs, whose medians the table shows with the spread of
# toolgate's ratio to nginx, default 3); BENCH_WARMUP (s, default 1); BENCH_STREAMS (the
# many-slow-streams test, default 5000, 0 skips it); BENCH_RESULTS (default
# bench/RESULTS.md); BENCH_ONLY (body names, e.g. "small stream", for trials);
# BENCH_PEER (default portkey; "none" leaves the peer out);
# KEEP_TMP=1 keeps the temp dir (wrk outputs, logs, confs); BENCH_HTTPS=0 leaves
# out the https rows (bench/https.sh, BENCH_HTTPS_* there).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
TG=$ROOT/$BUILD/toolgate
MOCK=$ROOT/$BUILD/mock-upstream
SHARED=${TG_SHARED:-$ROOT/../shared}
CORPUS=$SHARED/corpus/requests
DUR=${BENCH_DURATION:-5}
WARM=${BENCH_WARMUP:-1}
NSTREAMS=${BENCH_STREAMS:-5000}
REPS=${BENCH_REPS:-3}  # interleaved repetitions of the 64-connection runs
OUT=${BENCH_RESULTS:-$ROOT/bench/RESULTS.md}
THREADS=2            # toolgate threads = nginx workers
if [ -n "${MAKELEVEL:-}" ]; then CMD=${BENCH_CMD:-make bench}; else CMD=${BENCH_CMD:-sh bench/run.sh}; fi
T_START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

die() { echo "bench: $*" >&2; exit 1; }
log() { echo "bench: $*" >&2; }

for t in wrk nginx curl cc; do
    command -v $t >/dev/null 2>&1 || die "missing $t (make deps installs wrk, nginx-light, curl)"
done
[ -x "$TG" ] || die "no $TG (make BUILD=$BUILD all)"
[ -x "$MOCK" ] || die "no $MOCK (make BUILD=$BUILD $BUILD/mock-upstream)"
[ -r "$CORPUS/big-100.json" ] && [ -r "$CORPUS/big-400.json" ] ||
    die "no corpus at $CORPUS (set TG_SHARED to the directory holding corpus/)"

# Many streams need many descriptors: mock + proxy each hold 2 per stream.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
if [ "$NOFILE" != unlimited ] && [ "$NOFILE" -lt $((NSTREAMS * 2 + 200)) ]; then
    log "ulimit -n is $NOFILE: many-streams test lowered to $(( (NOFILE - 200) / 2 )) streams"
    NSTREAMS=$(( (NOFILE - 200) / 2 ))
fi

TMP=$(mktemp -d /tmp/toolgate-bench.XXXXXX) || die "mktemp"
chmod 755 "$TMP"
RES=$TMP/results
: > "$RES"
MOCK_PID= NGINX_PID= TG_PID= SAMPLER_PID= STATIC_PID= PK_PID=
PEER=${BENCH_PEER:-portkey}
# the bodies the peer is measured on (a pass-through: the gemini and
# discovery routes are toolgate's own work)
PEER_BODIES="small big100 stream"
JSON_UP=${BENCH_JSON_UPSTREAM:-nginx}

cleanup() {
    for p in $SAMPLER_PID $TG_PID $MOCK_PID $PK_PID; do kill "$p" 2>/dev/null; done
    for p in $NGINX_PID $STATIC_PID; do kill -QUIT "$p" 2>/dev/null; done
    sleep 0.3
    for p in $TG_PID $MOCK_PID $NGINX_PID $STATIC_PID $PK_PID; do kill -9 "$p" 2>/dev/null; done
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

# ---------------------------------------------------------------- helpers
put() { echo "$1 $2" >> "$RES"; }
get() { awk -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? "-" : v) }' "$RES"; }
# the repetitions of KEY (KEY.1, KEY.2, ...), one a line
reps_of() { awk -v k="$1." 'index($1, k) == 1 && substr($1, length(k) + 1) ~ /^[0-9]+$/ { print $2 }' "$RES"; }
median() { sort -n | awk '$1 != "-" { v[++n] = $1 } END { if (n == 0) print "-"; else if (n % 2) print v[(n + 1) / 2]; else printf "%.1f\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
# "min-max" of A.N / B.N over the repetitions
spread() {
    i=1
    while [ $i -le "$REPS" ]; do
        awk -v a="$(get "$1.$i")" -v b="$(get "$2.$i")" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f\n", a / b }'
        i=$((i + 1))
    done | sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f-%.2f", v[1], v[NR] }'
}
field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'; }

. bench/lib.sh

CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
# utime+stime in ticks, summed over the given pids.
cpu_ticks() {
    local t p v
    t=0
    for p in "$@"; do
        v=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
        t=$((t + v))
    done
    echo "$t"
}
# CPU time in ns, summed over the given pids' threads (schedstat: finer
# than the ticks of /proc/PID/stat, for runs of a few CPU-milliseconds).
cpu_ns() {
    local t p f
    t=0
    for p in "$@"; do
        for f in /proc/"$p"/task/*/schedstat; do
            t=$((t + $(cut -d' ' -f1 "$f" 2>/dev/null || echo 0)))
        done
    done
    echo "$t"
}
# Sum of a /proc/PID/status field (kB) over the given pids.
mem_kb() {
    local f t p v
    f=$1; shift
    t=0
    for p in "$@"; do
        v=$(awk -v f="$f:" '$1 == f { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
        t=$((t + ${v:-0}))
    done
    echo "$t"
}
children() { # direct children of $1
    local s
    for s in /proc/[0-9]*/stat; do
        awk -v pp="$1" '$4 == pp { print $1 }' "$s" 2>/dev/null
    done
}


# ---------------------------------------------------------------- bodies
B=$TMP/bodies
mkdir -p "$B"
printf '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}' > "$B/small.json"
printf '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello."}]}' > "$B/stream.json"
printf '%s' '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"note":{"type":"string"}},"required":["location"]}}}]}' > "$B/toolstream.json"
cp "$CORPUS/big-100.json" "$B/big100.json"
cp "$CORPUS/big-400.json" "$B/big400.json"
# First sight of a tool list: every description changed, so no schema of
# these bodies has been seen by any cache.
i=1
while [ $i -le 20 ]; do
    sed "s/\"description\": \"/&cold$i /g" "$CORPUS/big-100.json" > "$B/cold$i.json"
    i=$((i + 1))
done

# name  body-file  path (the same on all three systems; the mock answers */chat/completions,
# the static nginx any path; /sse/... goes to the mock, the rest to the JSON upstream)
BODIES="small:small.json:/v1/chat/completions
big100:big100.json:/v1/chat/completions
gemini100:big100.json:/gemini/v1/chat/completions
disc400:big400.json:/disc/v1/chat/completions
stream:stream.json:/sse/v1/chat/completions
toolcall:toolstream.json:/tcs/v1/chat/completions
toolcall-gemini:toolstream.json:/gtcs/v1/chat/completions"

# ---------------------------------------------------------------- start the three

start_static() { # nginx answering every request with the mock's JSON
    if [ "$JSON_UP" = mock ]; then SP=$MP; STATIC_PIDS=$MOCK_PID; return; fi
    SP=$(free_port 18500)
    mkdir -p "$TMP/static/logs"
    # the mock's own non-streamed answer, so that both upstreams say the same
    ANSWER=$(curl -s -H 'Content-Type: application/json' --data-binary @"$B/small.json" \
        "http://127.0.0.1:$MP/v1/chat/completions")
    case $ANSWER in *chat.completion*) ;; *) die "mock answered: $ANSWER" ;; esac
    # The tool-call stream (issue 20): the mock's one call in 20 argument
    # fragments, served whole by nginx at /tcs/ so that the upstream costs
    # the three systems the same and little (a POST to a static file is a
    # 405 in nginx: error_page turns it into the file).
    capture_toolcall "$B/toolstream.json" "$TMP/static/tcs.sse"
    static_nginx_conf $THREADS > "$TMP/static/nginx.conf"
    nginx -p "$TMP/static" -c "$TMP/static/nginx.conf" > "$TMP/static/logs/stdout" 2>&1 &
    STATIC_PID=$!
    sleep 0.3
    wait_http "http://127.0.0.1:$SP/" || die "static nginx did not start: $(cat "$TMP/static/logs/error.log")"
    STATIC_PIDS="$STATIC_PID $(children "$STATIC_PID" | tr '\n' ' ')"
}

start_nginx() {
    NP=$(free_port 18600)
    mkdir -p "$TMP/nginx/logs" "$TMP/nginx/tmp"
    chmod 777 "$TMP/nginx/tmp"
    cat > "$TMP/nginx/nginx.conf" <<EOF
daemon off;
worker_processes $THREADS;
worker_rlimit_nofile $((NSTREAMS * 2 + 1000));
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log warn;
events { worker_connections $((NSTREAMS * 2 + 500)); multi_accept on; }
http {
    access_log off;
    client_body_temp_path $TMP/nginx/tmp/body;
    proxy_temp_path $TMP/nginx/tmp/proxy;
    fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
    uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
    scgi_temp_path $TMP/nginx/tmp/scgi;
    client_body_buffer_size 1m;
    client_max_body_size 64m;
    keepalive_requests 1000000;
    upstream mock { server 127.0.0.1:$MP; keepalive 64; keepalive_requests 1000000; }
    upstream json { server 127.0.0.1:$SP; keepalive 64; keepalive_requests 1000000; }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_request_buffering on;
    proxy_buffering off;
    proxy_read_timeout 300s;
    server {
        listen 127.0.0.1:$NP reuseport;
        location /sse/ { proxy_pass http://mock; }
        location / { proxy_pass http://json; }
    }
}
EOF
    nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" > "$TMP/nginx/logs/stdout" 2>&1 &
    NGINX_PID=$!
    sleep 0.3
    wait_http "http://127.0.0.1:$NP/_count" || die "nginx did not start: $(cat "$TMP/nginx/logs/error.log")"
    NGINX_PIDS="$NGINX_PID $(children "$NGINX_PID" | tr '\n' ' ')"
}

start_toolgate() {
    TP=$(free_port $(( ${TP:-18700} + 1 )))
    cat > "$TMP/toolgate.conf" <<EOF
[server]
listen = 127.0.0.1:$TP
threads = $THREADS
access_log = off
log_level = warn
max_body = 64M
forward_headers = x-mock*
max_conns_per_ip = 0

[route gemini]
models = gemini-bench-*
prefix = /gemini
upstream = http://127.0.0.1:$SP/v1
dialect = gemini

[route disc]
models = disc-bench-*
prefix = /disc
upstream = http://127.0.0.1:$SP/v1
dialect = openai
discovery = on

EOF
    stream_routes >> "$TMP/toolgate.conf"
    "$TG" serve -c "$TMP/toolgate.conf" > "$TMP/toolgate.out" 2>> "$TMP/toolgate.err" &
    TG_PID=$!
    wait_http "http://127.0.0.1:$TP/readyz" || die "toolgate did not start: $(cat "$TMP/toolgate.err")"
}

# The Portkey AI gateway (Node.js): its own start-server.js, headless (no
# console UI, no log stream), NODE_ENV=production, kept on 127.0.0.1 by
# bench/portkey-loopback.mjs (it listens on every interface otherwise). It
# calls no one but the upstream a request names: each request carries
# x-portkey-provider: openai and x-portkey-custom-host (the mock for
# streams, the JSON upstream otherwise), and x-portkey-forward-headers
# passes the mock's X-Mock-* knobs on, as nginx and toolgate do.
PK_DIR=$ROOT/bench/node_modules/@portkey-ai/gateway
PK_MAIN=$PK_DIR/build/start-server.js
if [ "$PEER" = portkey ]; then
    if ! command -v node >/dev/null 2>&1; then
        log "no node: the peer is left out"; PEER=none
    elif [ ! -f "$PK_MAIN" ] || [ bench/package-lock.json -nt "$PK_DIR/package.json" ]; then
        log "installing the peer: npm ci in bench/"
        (cd bench && npm ci --no-audit --no-fund >/dev/null 2>&1) || { log "npm ci failed: the peer is left out"; PEER=none; }
    fi
fi
PK_FWD=x-mock,x-mock-chunks,x-mock-delay-ms,x-mock-stamp,x-mock-calls,x-mock-arg-pieces
start_portkey() {
    PP=$(free_port 18800)
    NODE_ENV=production node --import "$ROOT/bench/portkey-loopback.mjs" "$PK_MAIN" \
        --port="$PP" --headless > "$TMP/portkey.out" 2> "$TMP/portkey.err" < /dev/null &
    PK_PID=$!
    wait_http "http://127.0.0.1:$PP/" || die "portkey did not start: $(tail -5 "$TMP/portkey.err")"
}
# The peer's headers for a path (one word each: no spaces, for the streamer).
peer_h() { # path -> "-H k:v ..."
    case $1 in
    /sse/*) echo "-H x-portkey-provider:openai -H x-portkey-custom-host:http://127.0.0.1:$MP/v1 -H x-portkey-forward-headers:$PK_FWD" ;;
    *) echo "-H x-portkey-provider:openai -H x-portkey-custom-host:http://127.0.0.1:$SP/v1" ;;
    esac
}
# The systems a body or test runs on.
systems() { # [body]
    if [ "$PEER" = portkey ] && { [ -z "${1:-}" ] || echo " $PEER_BODIES " | grep -q " $1 "; }; then
        echo "direct nginx portkey toolgate"
    else
        echo "direct nginx toolgate"
    fi
}

mkdir -p "$BUILD/bench"
cc -O2 -o "$BUILD/bench/streamer" bench/streamer.c || die "cannot build bench/streamer.c"
STREAMER=$ROOT/$BUILD/bench/streamer

# The https rows first (bench/https.sh, its own upstreams and processes):
# the path users run, and the table's head. BENCH_HTTPS=0 skips them.
if [ "${BENCH_HTTPS:-1}" != 0 ]; then
    log "https rows: bench/https.sh"
    BENCH_HTTPS_OUT=$TMP/https.md TG_SHARED=$SHARED sh bench/https.sh || log "bench/https.sh failed: its rows are missing"
fi
start_mock
start_static
start_nginx
start_toolgate
[ "$PEER" = portkey ] && start_portkey
log "mock :$MP  json upstream ($JSON_UP) :$SP  nginx :$NP (pids $NGINX_PIDS)  toolgate :$TP (pid $TG_PID)  portkey :${PP:--} (pid ${PK_PID:--})  tmp $TMP"
sleep 0.5
put rss_idle.direct "$(mem_kb VmRSS $MOCK_PID)"
put rss_idle.nginx "$(mem_kb VmRSS $NGINX_PIDS)"
[ -n "$PK_PID" ] && put rss_idle.portkey "$(mem_kb VmRSS $PK_PID)"
[ -n "$PK_PID" ] && put anon_idle.portkey "$(mem_kb RssAnon $PK_PID)"
put rss_idle.toolgate "$(mem_kb VmRSS $TG_PID)"
# the part that is the process's own (heap, stacks, written library data),
# not pages of shared libraries it maps
put anon_idle.direct "$(mem_kb RssAnon $MOCK_PID)"
put anon_idle.nginx "$(mem_kb RssAnon $NGINX_PIDS)"
put anon_idle.toolgate "$(mem_kb RssAnon $TG_PID)"

url_of() { # system [path] -> base URL
    case $1 in
    direct) case ${2:-/sse/} in /sse/*) echo "http://127.0.0.1:$MP" ;; *) echo "http://127.0.0.1:$SP" ;; esac ;;
    nginx) echo "http://127.0.0.1:$NP" ;;
    toolgate) echo "http://127.0.0.1:$TP" ;;
    portkey) echo "http://127.0.0.1:$PP" ;;
    esac
}
# The path a system is asked on: the peer has one, the upstream is in its headers.
path_of() { # system path
    case $1 in portkey) echo /v1/chat/completions ;; *) echo "$2" ;; esac
}
# Extra streamer arguments for a system and path.
hdrs_of() { # system path
    case $1 in portkey) peer_h "$2" ;; *) echo "" ;; esac
}
pids_of() { # system [path]
    case $1 in
    direct) case ${2:-/sse/} in /sse/*) echo "$MOCK_PID" ;; *) echo "$STATIC_PIDS" ;; esac ;;
    nginx) echo "$NGINX_PIDS" ;;
    toolgate) echo "$TG_PID" ;;
    portkey) echo "$PK_PID" ;;
    esac
}

# A process of ours that died is a finding: say so in RESULTS.md, with its
# exit status (128+N = signal N), and restart it on the same port so that the
# rest of the table still gets measured.
: > "$TMP/incidents"
ensure_alive() { # phase
    local rc
    if ! kill -0 "$MOCK_PID" 2>/dev/null; then
        wait "$MOCK_PID" 2>/dev/null; rc=$?
        log "the mock (pid $MOCK_PID) died before $1, exit status $rc: $(tail -3 "$TMP/mock.err")"
        echo "- the mock upstream died before $1 (exit status $rc) and was restarted" >> "$TMP/incidents"
        : > "$TMP/mock.out"
        "$MOCK" --listen "127.0.0.1:$MP" > "$TMP/mock.out" 2>> "$TMP/mock.err" &
        MOCK_PID=$!
        [ "$JSON_UP" = mock ] && STATIC_PIDS=$MOCK_PID
        sleep 0.5
    fi
    if ! kill -0 "$TG_PID" 2>/dev/null; then
        wait "$TG_PID" 2>/dev/null; rc=$?
        log "toolgate (pid $TG_PID) died before $1, exit status $rc: $(tail -3 "$TMP/toolgate.err")"
        echo "- toolgate died before $1 (exit status $rc; stderr: $(tail -1 "$TMP/toolgate.err")) and was restarted" >> "$TMP/incidents"
        start_toolgate
    fi
    if [ -n "$PK_PID" ] && ! kill -0 "$PK_PID" 2>/dev/null; then
        wait "$PK_PID" 2>/dev/null; rc=$?
        log "portkey (pid $PK_PID) died before $1, exit status $rc: $(tail -3 "$TMP/portkey.err")"
        echo "- portkey died before $1 (exit status $rc; stderr: $(tail -1 "$TMP/portkey.err")) and was restarted" >> "$TMP/incidents"
        start_portkey
    fi
}

# ---------------------------------------------------------------- cold rewrite
# Ten never-seen tool lists (big-100, gemini route) through a fresh toolgate,
# then the same ten straight to the mock; the median difference is the cost
# of the first sight. curl time_total, connection set-up included on both.
median_curl() { # base-url path files...
    local u pth f
    u=$1; pth=$2; shift 2
    for f in "$@"; do
        curl -s -o /dev/null -w '%{time_total}\n' -H 'Content-Type: application/json' \
            --data-binary "@$f" "$u$pth"
    done | sort -n | awk '{ v[NR] = $1 } END { printf "%d\n", (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 * 1e6 }'
}
COLD="$B/cold1.json $B/cold2.json $B/cold3.json $B/cold4.json $B/cold5.json $B/cold6.json $B/cold7.json $B/cold8.json $B/cold9.json $B/cold10.json"
log "cold rewrite: 10 unseen big-100 tool lists, gemini route"
for s in toolgate nginx direct; do
    # shellcheck disable=SC2086
    put "cold.$s" "$(median_curl "$(url_of $s /gemini/)" /gemini/v1/chat/completions $COLD)"
done
log "first sight of big-400 on the discovery route"
for s in toolgate nginx direct; do
    put "colddisc.$s" "$(median_curl "$(url_of $s /disc/)" /disc/v1/chat/completions "$B/big400.json")"
done

# ---------------------------------------------------------------- wrk matrix
run_wrk() { # system name file path conns seconds -> stores name.conns.system.*
    local s name file pth c d th pids t0 t1 line k f n
    s=$1; name=$2; file=$3; pth=$4; c=$5; d=$6
    th=2; [ "$c" -lt 2 ] && th=1
    pids=$(pids_of "$s" "$pth")
    # shellcheck disable=SC2086
    t0=$(cpu_ticks $pids)
    if [ "$c" = 1 ]; then
        # One connection: bench/streamer -k, one request at a time on one
        # keep-alive connection (wrk's percentiles at -c1 were not credible).
        # shellcheck disable=SC2046
        "$STREAMER" -k "$d" -p "$(url_of "$s" "$pth" | sed 's/.*://')" -u "$(path_of "$s" "$pth")" -b "$file" \
            $(hdrs_of "$s" "$pth") > "$TMP/wrk.$name.c$c.$s" 2>&1 < /dev/null
        line=$(grep '^requests=' "$TMP/wrk.$name.c$c.$s")
    else
        HEADERS=$(hdrs_of "$s" "$pth" | sed 's/^-H //; s/ -H /|/g') \
        BODY="$file" wrk -t$th -c"$c" -d"${d}s" --timeout 10s -s bench/post.lua "$(url_of "$s" "$pth")$(path_of "$s" "$pth")" \
            > "$TMP/wrk.$name.c$c.$s" 2>&1 < /dev/null
        line=$(grep '^RESULT' "$TMP/wrk.$name.c$c.$s")
    fi
    # shellcheck disable=SC2086
    t1=$(cpu_ticks $pids)
    [ -n "$line" ] || { log "load run failed: $s $name c$c: $(tail -3 "$TMP/wrk.$name.c$c.$s")"; return; }
    k=$name.c$c.$s
    for f in rps p50 p99 requests errors non2xx; do put "$k.$f" "$(field "$line" $f)"; done
    n=$(field "$line" requests)
    put "$k.cpu" "$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$CLK_TCK" \
        'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / hz / n; else print "-" }')"
    log "$(printf '%-9s %-9s c%-3s %s' "$s" "$name" "$c" "$line")"
}

while IFS=: read -r name file pth; do
    case " ${BENCH_ONLY:-$name} " in *" $name "*) ;; *) continue ;; esac
    ensure_alive "the $name runs"
    for s in $(systems "$name"); do # warm-up: caches, keep-alive pools
        HEADERS=$(hdrs_of "$s" "$pth" | sed 's/^-H //; s/ -H /|/g') \
        BODY="$B/$file" wrk -t2 -c16 -d"${WARM}s" --timeout 10s -s bench/post.lua "$(url_of $s "$pth")$(path_of $s "$pth")" >/dev/null 2>&1 < /dev/null
    done
    for c in 1 16; do
        for s in $(systems "$name"); do
            run_wrk $s "$name" "$B/$file" "$pth" $c "$DUR"
        done
    done
    # 64 connections, the rows with targets: REPS interleaved repetitions,
    # each kept as .rps.N / .cpu.N; the table takes their medians
    rep=1
    while [ $rep -le "$REPS" ]; do
        for s in $(systems "$name"); do
            run_wrk $s "$name" "$B/$file" "$pth" 64 "$DUR"
            for f in rps cpu; do put "$name.c64.$s.$f.$rep" "$(get "$name.c64.$s.$f")"; done
        done
        rep=$((rep + 1))
    done
    for s in $(systems "$name"); do
        for f in rps cpu; do put "$name.c64.$s.$f" "$(reps_of "$name.c64.$s.$f" | median)"; done
    done
done <<EOF
$BODIES
EOF
# First sight again, in a process that has served load: a new agent's tool
# list reaching a proxy that has been up for a while, the usual case. (The
# fresh process above also pays for growing its heap: page faults, which on
# this kind of virtual machine cost several microseconds each.)
COLD2="$B/cold11.json $B/cold12.json $B/cold13.json $B/cold14.json $B/cold15.json $B/cold16.json $B/cold17.json $B/cold18.json $B/cold19.json $B/cold20.json"
log "cold rewrite, warm process: 10 more unseen tool lists"
for s in toolgate nginx direct; do
    # shellcheck disable=SC2086
    put "coldwarm.$s" "$(median_curl "$(url_of $s /gemini/)" /gemini/v1/chat/completions $COLD2)"
done
ensure_alive "the stream tests"
put rss_load.direct "$(mem_kb VmHWM $MOCK_PID)"
put rss_load.nginx "$(mem_kb VmHWM $NGINX_PIDS)"
put rss_load.toolgate "$(mem_kb VmHWM $TG_PID)"
[ -n "$PK_PID" ] && put rss_load.portkey "$(mem_kb VmHWM $PK_PID)"

# ---------------------------------------------------------------- streams
# 8 streams in flight, 400 in all, 10 content chunks 5 ms apart each. The
# mock stamps each content chunk with its send time (X-Mock-Stamp), so the
# streamer measures every chunk's one-way latency, mock to client.
log "streams: 400 x (10 chunks, 5 ms apart), 8 at a time"
for s in $(systems); do
    # shellcheck disable=SC2046
    line=$("$STREAMER" -p "$(url_of $s | sed 's/.*://')" -u "$(path_of $s /sse/v1/chat/completions)" -b "$B/stream.json" -H 'X-Mock-Chunks: 10' \
        -H 'X-Mock-Delay-Ms: 5' -H 'X-Mock-Stamp: 1' $(hdrs_of $s /sse/) -c 8 -n 400 -t 60)
    log "$(printf '%-9s %s' $s "$line")"
    for f in ok failed coalesced ttfb_p50 ttfb_p99 gap_p50 gap_p99 lat_n lat_p50 lat_p99; do put "st.$s.$f" "$(field "$line" $f)"; done
done

# Time to first event without queueing: one stream at a time, 1 chunk, no delay.
log "TTFB: 1000 streams one at a time"
for s in $(systems); do
    # shellcheck disable=SC2046
    line=$("$STREAMER" -p "$(url_of $s | sed 's/.*://')" -u "$(path_of $s /sse/v1/chat/completions)" -b "$B/stream.json" \
        -H 'X-Mock-Chunks: 1' $(hdrs_of $s /sse/) -c 1 -n 1000 -t 60)
    log "$(printf '%-9s %s' $s "$line")"
    for f in failed ttfb_p50 ttfb_p99; do put "t1.$s.$f" "$(field "$line" $f)"; done
done

# ---------------------------------------------------------------- tool-call streams
# One call whose arguments come in 20 fragments 20 ms apart (mock scenario
# parallel): time from connect() to the first non-empty argument fragment.
# The sse route is dialect openai, where such a call is relayed as it comes
# (bench/toolstream.sh runs this alone, also against a held route).
log "tool-call streams: 20 x (one call, 20 argument fragments 20 ms apart), 4 at a time"
for s in $(systems); do
    # shellcheck disable=SC2046
    line=$("$STREAMER" -p "$(url_of $s | sed 's/.*://')" -u "$(path_of $s /sse/v1/chat/completions)" -b "$B/toolstream.json" \
        -H 'X-Mock: parallel' -H 'X-Mock-Calls: 1' -H 'X-Mock-Arg-Pieces: 20' -H 'X-Mock-Delay-Ms: 20' \
        $(hdrs_of $s /sse/) -c 4 -n 20 -t 60)
    log "$(printf '%-9s %s' $s "$line")"
    for f in ok events ttfa_p50 ttfa_p99; do put "ts.$s.$f" "$(field "$line" $f)"; done
done

# ---------------------------------------------------------------- many slow streams
# NSTREAMS streams open together (opened at 2,500/s), 20 chunks 500 ms apart.
# toolgate restarts first so that its VmHWM is this test's alone.
ensure_alive "the many-streams test"
kill "$TG_PID"; wait "$TG_PID" 2>/dev/null
start_toolgate
put rss_fresh.toolgate "$(mem_kb VmRSS $TG_PID)"
# CPU per event (issue 20): the same slow streams, 100 of them first, then
# NSTREAMS; each system's own CPU over the run divided by the events the
# client got.
for s in $(systems); do
    [ "$NSTREAMS" -gt 0 ] || break
    pids=$(pids_of $s)
    # shellcheck disable=SC2086
    c0=$(cpu_ns $pids)
    # shellcheck disable=SC2046
    line=$("$STREAMER" -p "$(url_of $s | sed 's/.*://')" -u "$(path_of $s /sse/v1/chat/completions)" -b "$B/stream.json" -H 'X-Mock-Chunks: 20' \
        -H 'X-Mock-Delay-Ms: 500' $(hdrs_of $s /sse/) -c 100 -n 100 -r 2500 -t 60)
    # shellcheck disable=SC2086
    c1=$(cpu_ns $pids)
    log "$(printf '%-9s 100 slow streams: %s' $s "$line")"
    put "few.$s.ttfb_p50" "$(field "$line" ttfb_p50)"
    put "few.$s.cpu_ev" "$(awk -v a="$c0" -v b="$c1" -v n="$(field "$line" events)" \
        'BEGIN { if (n > 0) printf "%.2f", (b - a) / 1000 / n; else print "-" }')"
done
for s in $(systems); do
    [ "$NSTREAMS" -gt 0 ] || break
    log "$NSTREAMS slow streams: $s"
    pids=$(pids_of $s)
    # shellcheck disable=SC2086
    c0=$(cpu_ns $pids)
    # shellcheck disable=SC2086
    base=$(mem_kb VmRSS $pids)
    (   # peak of the summed VmRSS (nginx: master + workers), sampled
        pk=0
        while :; do
            v=$(mem_kb VmRSS $pids); [ "$v" -gt "$pk" ] && pk=$v && echo "$pk" > "$TMP/peak.$s"
            sleep 0.25
        done
    ) &
    SAMPLER_PID=$!
    # shellcheck disable=SC2046
    line=$("$STREAMER" -p "$(url_of $s | sed 's/.*://')" -u "$(path_of $s /sse/v1/chat/completions)" -b "$B/stream.json" -H 'X-Mock-Chunks: 20' \
        -H 'X-Mock-Delay-Ms: 500' $(hdrs_of $s /sse/) -c "$NSTREAMS" -n "$NSTREAMS" -r 2500 -t 60)
    # shellcheck disable=SC2086
    c1=$(cpu_ns $pids)
    kill $SAMPLER_PID 2>/dev/null; wait $SAMPLER_PID 2>/dev/null; SAMPLER_PID=
    log "$(printf '%-9s %s' $s "$line")"
    for f in ok failed peak_open ttfb_p50 ttfb_p99 gap_p99; do put "many.$s.$f" "$(field "$line" $f)"; done
    put "many.$s.cpu_ev" "$(awk -v a="$c0" -v b="$c1" -v n="$(field "$line" events)" \
        'BEGIN { if (n > 0) printf "%.2f", (b - a) / 1000 / n; else print "-" }')"
    put "many.$s.rss" "$(cat "$TMP/peak.$s" 2>/dev/null || echo "$base")"
    [ $s = toolgate ] && put many.toolgate.hwm "$(mem_kb VmHWM $TG_PID)"
    sleep 1
done

# ---------------------------------------------------------------- the table
T_END=$(date +%s)
TABLE=$TMP/table
: > "$TABLE"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
diff_() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "") print ""; else if (a == "-" || b == "-") print "-"; else printf "%d", a - b }'; }
mb() { awk -v a="$1" 'BEGIN { if (a == "-") print "-"; else printf "%.1f", a / 1024 }'; }
# verdict VALUE OP LIMIT  (OP: le, ge, lt, eq)
# verdict_added VALUE LIMIT: an added figure below -LIMIT means the floor
# itself was slower than the proxy in this run: noise, not a result.
verdict_added() {
    awk -v v="$1" -v l="$2" 'BEGIN { if (v == "-") print "n/a"; else if (v + 0 < -l) print "noise?";
        else print (v + 0 <= l + 0 ? "ok" : "MISSED") }'
}
verdict() {
    awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
        if (v == "-" || l == "-") { print "n/a"; exit }
        ok = (op == "le" && v + 0 <= l + 0) || (op == "ge" && v + 0 >= l + 0) ||
             (op == "lt" && v + 0 < l + 0) || (op == "eq" && v + 0 == l + 0)
        print (ok ? "ok" : "MISSED") }'
}
# row label direct nginx toolgate target verdict [portkey]  (ratios computed
# here; the peer's cell and ratio stay empty on rows it is not measured on)
row() {
    local p rp
    p=${7:-}; rp=""
    [ -n "$p" ] && rp=$(ratio "$4" "$p")
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$p" "$4" \
        "$(ratio "$4" "$2")" "$(ratio "$4" "$3")" "$rp" "$5" "$6" >> "$TABLE"
}
# peer NAME: the peer's figure NAME (a key of $RES), or empty when the peer
# is not measured on that body ("-" when it was to be and was not).
peer() {
    [ "$PEER" = portkey ] || { echo ""; return; }
    case " $PEER_BODIES many t1 st ts rss_idle anon_idle rss_load " in
    *" ${1%%.*} "*) get "$1" ;;
    *) echo "" ;;
    esac
}
errs() { # name.cC -> " (N errors)" when any system had errors or non-2xx
    local e s f v
    e=0
    for s in direct nginx portkey toolgate; do
        for f in errors non2xx; do v=$(get "$1.$s.$f"); [ "$v" != - ] && e=$((e + v)); done
    done
    [ $e -gt 0 ] && echo " ($e errors/non-2xx)"
}

echo "| figure | direct | nginx | portkey | toolgate | tg/direct | tg/nginx | tg/portkey | target | |" >> "$TABLE"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---|" >> "$TABLE"
echo "$BODIES" | while IFS=: read -r name file pth; do
    d=$(get "$name.c1.direct.p50"); n=$(get "$name.c1.nginx.p50"); t=$(get "$name.c1.toolgate.p50")
    p=$(peer "$name.c1.portkey.p50"); p9=$(peer "$name.c1.portkey.p99")
    row "$name: latency p50 at 1 conn (µs, keep-alive)$(errs "$name.c1")" "$d" "$n" "$t" "" "" "$p"
    d9=$(get "$name.c1.direct.p99"); n9=$(get "$name.c1.nginx.p99"); t9=$(get "$name.c1.toolgate.p99")
    row "$name: latency p99 at 1 conn (µs, keep-alive)" "$d9" "$n9" "$t9" "" "" "$p9"
    if [ "$name" = small ]; then
        row "small: added p50 at 1 conn (µs, minus direct)" 0 "$(diff_ "$n" "$d")" "$(diff_ "$t" "$d")" "" "" "$(diff_ "$p" "$d")"
        a=$(diff_ "$t9" "$d9")
        row "small: added p99 at 1 conn (µs, minus direct)" 0 "$(diff_ "$n9" "$d9")" "$a" "≤ 100" "$(verdict_added "$a" 100)" "$(diff_ "$p9" "$d9")"
    fi
    for c in 16 64; do
        d=$(get "$name.c$c.direct.rps"); n=$(get "$name.c$c.nginx.rps"); t=$(get "$name.c$c.toolgate.rps")
        tgt=""; v=""
        if { [ "$name" = small ] || [ "$name" = stream ] || [ "$name" = toolcall ] ||
            [ "$name" = toolcall-gemini ]; } && [ $c = 64 ]; then
            tgt="≥ 0.8 × nginx"; v=$(verdict "$(ratio "$t" "$n")" ge 0.8)
        elif [ "$name" = gemini100 ] && [ $c = 64 ]; then
            tgt="≥ nginx"; v=$(verdict "$(ratio "$t" "$n")" ge 1)
        fi
        sp=""
        [ $c = 64 ] && sp=" (median of $REPS; tg/nginx per run $(spread "$name.c64.toolgate.rps" "$name.c64.nginx.rps"))"
        row "$name: requests/s at $c conns$sp$(errs "$name.c$c")" "$d" "$n" "$t" "$tgt" "$v" "$(peer "$name.c$c.portkey.rps")"
    done
    d=$(get "$name.c64.direct.cpu"); n=$(get "$name.c64.nginx.cpu"); t=$(get "$name.c64.toolgate.cpu")
    tgt=""; v=""
    [ "$name" = small ] && { tgt="≤ 40"; v=$(verdict "$t" le 40); }
    case $name in stream | toolcall | toolcall-gemini) tgt="≤ 2 × nginx"; v=$(verdict "$(ratio "$t" "$n")" le 2) ;; esac
    row "$name: CPU µs/request at 64 conns (process's own, median of $REPS; tg/nginx per run $(spread "$name.c64.toolgate.cpu" "$name.c64.nginx.cpu"))" "$d" "$n" "$t" "$tgt" "$v" "$(peer "$name.c64.portkey.cpu")"
done
d=$(get cold.direct); n=$(get cold.nginx); t=$(get cold.toolgate)
a=$(diff_ "$t" "$d")
row "first sight of a big-100 tool list, gemini, fresh process (µs, median of 10)" "$d" "$n" "$t" "" ""
row "first sight, fresh process: added (µs, minus direct)" 0 "$(diff_ "$n" "$d")" "$a" "< 5000" "$(verdict "$a" lt 5000)"
d=$(get coldwarm.direct); n=$(get coldwarm.nginx); t=$(get coldwarm.toolgate)
a=$(diff_ "$t" "$d")
row "first sight of a big-100 tool list, gemini, after the load runs (µs, median of 10)" "$d" "$n" "$t" "" ""
row "first sight, after the load runs: added (µs, minus direct)" 0 "$(diff_ "$n" "$d")" "$a" "< 5000" "$(verdict "$a" lt 5000)"
row "first sight of big-400, discovery on (µs, 1 request)" "$(get colddisc.direct)" "$(get colddisc.nginx)" "$(get colddisc.toolgate)" "" ""
for f in ttfb_p50 ttfb_p99; do
    d=$(get "t1.direct.$f"); n=$(get "t1.nginx.$f"); t=$(get "t1.toolgate.$f"); p=$(peer "t1.portkey.$f")
    row "stream, 1 at a time: $f (µs, to first SSE event)" "$d" "$n" "$t" "" "" "$p"
    a=$(diff_ "$t" "$d")
    case $f in
    ttfb_p50) row "stream, 1 at a time: added TTFB p50 (µs)" 0 "$(diff_ "$n" "$d")" "$a" "" "" "$(diff_ "$p" "$d")" ;;
    ttfb_p99) row "stream, 1 at a time: added TTFB p99 (µs)" 0 "$(diff_ "$n" "$d")" "$a" "≤ 200" "$(verdict_added "$a" 200)" "$(diff_ "$p" "$d")" ;;
    esac
done
for f in ttfb_p50 ttfb_p99 lat_p50 lat_p99 gap_p50 gap_p99; do
    d=$(get "st.direct.$f"); n=$(get "st.nginx.$f"); t=$(get "st.toolgate.$f"); p=$(peer "st.portkey.$f")
    case $f in
    lat_*) row "stream (8 conc, 5 ms chunks): chunk latency ${f#lat_}, mock send to client read (µs)" "$d" "$n" "$t" "" "" "$p" ;;
    gap_*) row "stream (8 conc, 5 ms chunks): gap between events ${f#gap_}, jitter (µs)" "$d" "$n" "$t" "" "" "$p" ;;
    *) row "stream (8 conc, 5 ms chunks): $f (µs)" "$d" "$n" "$t" "" "" "$p" ;;
    esac
    a=$(diff_ "$t" "$d"); pa=$(diff_ "$p" "$d")
    case $f in
    ttfb_p99) row "stream (8 conc): added TTFB p99 (µs)" 0 "$(diff_ "$n" "$d")" "$a" "" "" "$pa" ;;
    lat_p50) row "stream: added per-chunk delay p50 (µs, chunk latency minus direct)" 0 "$(diff_ "$n" "$d")" "$a" "≤ 20" "$(verdict_added "$a" 20)" "$pa" ;;
    lat_p99) row "stream: added per-chunk delay p99 (µs, chunk latency minus direct)" 0 "$(diff_ "$n" "$d")" "$a" "" "" "$pa" ;;
    esac
done
d=$(get ts.direct.ttfa_p50); n=$(get ts.nginx.ttfa_p50); t=$(get ts.toolgate.ttfa_p50); p=$(peer ts.portkey.ttfa_p50)
row "tool-call stream (20 fragments, 20 ms apart): first argument fragment p50 (µs from connect)" "$d" "$n" "$t" "" "" "$p"
a=$(diff_ "$t" "$d")
row "tool-call stream: added time to first argument fragment p50 (µs)" 0 "$(diff_ "$n" "$d")" "$a" "≤ 1000" "$(verdict_added "$a" 1000)" "$(diff_ "$p" "$d")"
row "tool-call stream: events reaching the client (of 480)" "$(get ts.direct.events)" "$(get ts.nginx.events)" "$(get ts.toolgate.events)" "" "" "$(peer ts.portkey.events)"
t=$(get st.toolgate.coalesced); d=$(get st.direct.coalesced); n=$(get st.nginx.coalesced)
# Seen from the client, so a descheduled client also coalesces: 0 is "ok",
# no more than direct or nginx had in the same run is "noise?", else MISSED.
v=$(awk -v t="$t" -v d="$d" -v n="$n" 'BEGIN { if (t == "-") print "n/a"; else if (t + 0 == 0) print "ok";
    else if (t + 0 <= d + 0 || t + 0 <= n + 0) print "noise?"; else print "MISSED" }')
row "stream: events coalesced into one read (of 5,200)" "$d" "$n" "$t" "0" "$v" "$(peer st.portkey.coalesced)"
row "stream: failed streams (of 400)" "$(get st.direct.failed)" "$(get st.nginx.failed)" "$(get st.toolgate.failed)" "0" "$(verdict "$(get st.toolgate.failed)" eq 0)" "$(peer st.portkey.failed)"
pmb() { [ -n "$1" ] && mb "$1"; }  # the peer's MB, or empty
t=$(mb "$(get rss_idle.toolgate)")
row "RSS idle (MB)" "$(mb "$(get rss_idle.direct)")" "$(mb "$(get rss_idle.nginx)")" "$t" "< 10" "$(verdict "$t" lt 10)" "$(pmb "$(peer rss_idle.portkey)")"
row "RSS idle, anonymous only (MB, RssAnon: without shared-library pages)" "$(mb "$(get anon_idle.direct)")" "$(mb "$(get anon_idle.nginx)")" "$(mb "$(get anon_idle.toolgate)")" "" "" "$(pmb "$(peer anon_idle.portkey)")"
row "peak RSS after the wrk runs (MB, VmHWM)" "$(mb "$(get rss_load.direct)")" "$(mb "$(get rss_load.nginx)")" "$(mb "$(get rss_load.toolgate)")" "" "" "$(pmb "$(peer rss_load.portkey)")"
t=$(mb "$(get many.toolgate.rss)")
row "$NSTREAMS slow streams: peak RSS (MB, sampled)" "$(mb "$(get many.direct.rss)")" "$(mb "$(get many.nginx.rss)")" "$t" "< 200" "$(verdict "$t" lt 200)" "$(pmb "$(peer many.portkey.rss)")"
row "$NSTREAMS slow streams: VmHWM of a fresh toolgate (MB)" "" "" "$(mb "$(get many.toolgate.hwm)")" "" ""
t=$(get many.toolgate.ok)
row "$NSTREAMS slow streams: completed ok" "$(get many.direct.ok)" "$(get many.nginx.ok)" "$t" "$NSTREAMS" "$(verdict "$t" eq "$NSTREAMS")" "$(peer many.portkey.ok)"
row "$NSTREAMS slow streams: peak open at once" "$(get many.direct.peak_open)" "$(get many.nginx.peak_open)" "$(get many.toolgate.peak_open)" "" "" "$(peer many.portkey.peak_open)"
t=$(get many.toolgate.ttfb_p50)
row "$NSTREAMS slow streams (opened at 2,500/s): TTFB p50 (µs)" "$(get many.direct.ttfb_p50)" "$(get many.nginx.ttfb_p50)" "$t" "< 10000" "$(verdict "$t" lt 10000)" "$(peer many.portkey.ttfb_p50)"
row "$NSTREAMS slow streams: TTFB p99 (µs)" "$(get many.direct.ttfb_p99)" "$(get many.nginx.ttfb_p99)" "$(get many.toolgate.ttfb_p99)" "" "" "$(peer many.portkey.ttfb_p99)"
row "100 slow streams: CPU µs/event (process's own)" "$(get few.direct.cpu_ev)" "$(get few.nginx.cpu_ev)" "$(get few.toolgate.cpu_ev)" "" "" "$(peer few.portkey.cpu_ev)"
t=$(get many.toolgate.cpu_ev); b=$(get few.toolgate.cpu_ev)
lim=$(awk -v b="$b" 'BEGIN { if (b == "-") print "-"; else printf "%.2f", 2 * b }')
row "$NSTREAMS slow streams: CPU µs/event (process's own)" "$(get many.direct.cpu_ev)" "$(get many.nginx.cpu_ev)" "$t" "≤ 2 × toolgate's at 100 ($lim)" "$(verdict "$t" le "$lim")" "$(peer many.portkey.cpu_ev)"

MODEL=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
{
    echo "# toolgate benchmark results"
    echo
    echo "Written by \`bench/run.sh\`; the latest run replaces this file."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC') ($((T_END - T_START)) s)"
    echo "- machine: $(nproc) CPUs, $MODEL, $(uname -sr)"
    echo "- command: \`$CMD\` (BUILD=$BUILD, $DUR s per wrk run, $WARM s warm-up, wrk $(wrk -v 2>&1 | awk 'NR==1 { print $2 }'), $(nginx -v 2>&1 | sed 's/.*: //'))"
    echo "- load average (other users of the machine): $LOAD0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    echo "- toolgate $("$TG" version 2>/dev/null | head -1), git $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- . ':!bench/RESULTS.md' 2>/dev/null || echo '+dirty')"
    echo
    if [ -s "$TMP/https.md" ]; then cat "$TMP/https.md"; echo; echo "### plain-http upstream"; echo; fi
    echo "direct = the load tool straight to the upstream (the floor); nginx = plain reverse"
    echo "proxy, $THREADS workers, bodies kept in memory, upstream keep-alive, proxy_buffering off;"
    if [ "$PEER" = portkey ]; then
        echo "portkey = the Portkey AI gateway $(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$PK_DIR/package.json" | head -1) (npm @portkey-ai/gateway, Node.js $(node --version), one process),"
        echo "an OpenAI pass-through (x-portkey-provider: openai, x-portkey-custom-host: the same upstream),"
        echo "headless, NODE_ENV=production; measured on small, big100, stream and the stream tests."
    fi
    echo "toolgate = $THREADS threads. Upstream: JSON answers from $( [ "$JSON_UP" = mock ] && echo "the project's mock" || echo "nginx \`return 200\` with the mock's chat.completion (body discarded unparsed)"),"
    echo "streams from the project's mock (test/mock/mock_upstream.c). The load tools and upstreams"
    echo "share the same $(nproc) CPUs. Latencies in µs. \"added\" = system minus direct, same run."
    echo "One-connection latencies: bench/streamer -k (one request at a time on one keep-alive"
    echo "connection, $DUR s); requests/s: wrk with bench/post.lua, 2 threads."
    echo "CPU µs/request: utime+stime of the system's own processes (direct: the upstream's) over"
    echo "the 64-connection run, divided by the requests wrk completed. RSS: toolgate's process;"
    echo "nginx: master + workers; direct: the mock."
    echo
    cat "$TABLE"
    echo
    if [ -s "$TMP/incidents" ]; then
        echo "Incidents during this run:"
        echo
        cat "$TMP/incidents"
        echo
    fi
    echo "Bodies: small = one message, no tools; big100 = corpus big-100.json (openai route);"
    echo "gemini100 = the same on a dialect = gemini route (schema rewriting), warm after the"
    echo "warm-up; disc400 = big-400.json with discovery = on; stream = small body, \"stream\": true,"
    echo "5 chunks, no delay (one request = the whole stream). Streams rows: bench/streamer.c,"
    echo "TTFB = connect() to the first SSE event; chunk latency = from the mock's send of a"
    echo "content chunk (a CLOCK_MONOTONIC stamp written into it, X-Mock-Stamp) to the client's"
    echo "read of it, so \"added per-chunk delay\" is what the proxy adds to every chunk; gap ="
    echo "time between consecutive events, where a delay every chunk suffers cancels out, so"
    echo "gaps show only jitter. toolcall = the mock's one tool call in 20 argument fragments,"
    echo "streamed by a static nginx, on an openai route (the identity fast path);"
    echo "toolcall-gemini = the same stream on a dialect = gemini route (schema and stream rewriting)."
} > "$OUT"
cat "$OUT"
log "wrote $OUT in $((T_END - T_START)) s"
