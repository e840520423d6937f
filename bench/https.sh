#!/bin/sh
# bench/https.sh -- toolgate against nginx on the path users run: https to
# the provider (issue 29). bench/run.sh calls it first and puts its table
# at the head of RESULTS.md; alone, `sh bench/https.sh` prints the table.
#
# The upstream: an nginx with a certificate of a private CA made here,
# serving the bench's answers over TLS on three ports: HTTP/1.1 only, h2
# offered (ALPN, as hosted providers do), and HTTP/1.1 closing every
# connection after one answer (each request a new upstream connection).
# Its / answers the mock's chat.completion, /tcs/ the captured tool-call
# stream, /sse/ proxies to the mock's text stream. The systems:
#   direct    wrk -> the TLS upstream (the floor)
#   nginx     wrk -> nginx (proxy_pass https://, upstream keepalive 64,
#             proxy_ssl_verify on, session reuse) -> the TLS upstream
#   toolgate  wrk -> toolgate (tls_ca_file = the private CA) -> the TLS upstream
# Rows, each the median of BENCH_HTTPS_REPS (3) interleaved runs of
# BENCH_HTTPS_DURATION (4) s at 64 connections, with the spread (min-max of
# the ratio): small, big100, text stream and tool-call stream over
# HTTP/1.1, small and tool-call stream with h2 offered; then a freshly
# started process at 64 connections (req/s and p99 in its first 3 s), and
# the CPU one new upstream connection costs (CPU a request when every
# upstream answer closes its connection, minus CPU a request warm).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) BD=$BUILD ;; *) BD=$ROOT/$BUILD ;; esac
TG=$BD/toolgate
MOCK=$BD/mock-upstream
SHARED=${TG_SHARED:-$ROOT/../shared}
REPS=${BENCH_HTTPS_REPS:-3}
DUR=${BENCH_HTTPS_DURATION:-4}
THREADS=2
OUTMD=${BENCH_HTTPS_OUT:-}

die() { echo "bench/https: $*" >&2; exit 1; }
log() { echo "bench/https: $*" >&2; }
for t in wrk nginx curl openssl; do command -v $t >/dev/null 2>&1 || die "missing $t"; done
[ -x "$TG" ] && [ -x "$MOCK" ] || die "no $TG or $MOCK (make all $BUILD/mock-upstream)"

TMP=$(mktemp -d /tmp/toolgate-https.XXXXXX) || die mktemp
chmod 755 "$TMP"
MOCK_PID= UP_PID= NG_PID= TG_PID=
cleanup() {
    for p in $TG_PID $MOCK_PID; do kill "$p" 2>/dev/null; done
    for p in $NG_PID $UP_PID; do kill -QUIT "$p" 2>/dev/null; done
    sleep 0.3
    for p in $TG_PID $MOCK_PID $NG_PID $UP_PID; do kill -9 "$p" 2>/dev/null; done
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
. bench/lib.sh
field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'; }
children() { ps -o pid= --ppid "$1" 2>/dev/null; }
cpu_ticks() {
    t=0
    for p in "$@"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0))); done
    echo "$t"
}
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

# ---- a private CA and the upstream's certificate
P=$TMP/pki
mkdir -p "$P"
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=bench CA" -days 2 -keyout "$P/ca.key" \
    -out "$P/ca.pem" 2>/dev/null || die "openssl: CA"
openssl req -new -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$P/up.key" \
    -out "$P/up.csr" 2>/dev/null || die "openssl: key"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$P/up.ext"
openssl x509 -req -in "$P/up.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
    -extfile "$P/up.ext" -out "$P/up.pem" 2>/dev/null || die "openssl: certificate"

# ---- bodies and the upstream
B=$TMP/bodies
mkdir -p "$B" "$TMP/up/logs" "$TMP/up/body"
printf '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}' > "$B/small.json"
printf '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello."}]}' > "$B/stream.json"
printf '%s' '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"note":{"type":"string"}},"required":["location"]}}}]}' > "$B/toolstream.json"
cp "$SHARED/corpus/requests/big-100.json" "$B/big100.json" 2>/dev/null || die "no corpus under $SHARED"
start_mock
ANSWER=$(curl -s -H 'Content-Type: application/json' --data-binary @"$B/small.json" \
    "http://127.0.0.1:$MP/v1/chat/completions")
case $ANSWER in *chat.completion*) ;; *) die "mock answered: $ANSWER" ;; esac
capture_toolcall "$B/toolstream.json" "$TMP/up/tcs.sse"
U1=$(free_port 19100); U2=$(free_port $((U1 + 1))); U3=$(free_port $((U2 + 1)))
up_server() { # PORT LISTEN-FLAGS [EXTRA]
    cat <<EOF
    server {
        listen 127.0.0.1:$1 $2 reuseport;
        ssl_certificate $P/up.pem;
        ssl_certificate_key $P/up.key;
        ${3:-}
        location / { return 200 '$ANSWER'; }
        location /tcs/ { error_page 405 =200 /tcs.sse; return 405; }
        location = /tcs.sse { internal; default_type text/event-stream; root $TMP/up; }
        location /sse/ { proxy_pass http://mock/; }
    }
EOF
}
cat > "$TMP/up/nginx.conf" <<EOF
daemon off;
worker_processes $THREADS;
pid $TMP/up/nginx.pid;
error_log $TMP/up/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $TMP/up/body;
    proxy_temp_path $TMP/up/body;
    keepalive_requests 1000000;
    client_max_body_size 64m;
    default_type application/json;
    ssl_session_cache shared:UP:10m;
    upstream mock { server 127.0.0.1:$MP; keepalive 64; }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering off;
$(up_server "$U1" ssl)
$(up_server "$U2" "ssl http2")
$(up_server "$U3" ssl "keepalive_requests 1;")
}
EOF
nginx -p "$TMP/up" -c "$TMP/up/nginx.conf" > "$TMP/up/logs/stdout" 2>&1 &
UP_PID=$!
sleep 0.3
[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$P/ca.pem" -X POST "https://127.0.0.1:$U1/")" = 200 ] ||
    die "TLS upstream did not start: $(cat "$TMP/up/logs/error.log")"

# ---- nginx, the reference proxy
NP=$(free_port 19200)
mkdir -p "$TMP/ng/logs" "$TMP/ng/tmp"
chmod 777 "$TMP/ng/tmp"
loc() { # PATH UPSTREAM URI
    printf '        location %s { proxy_pass https://%s%s; }\n' "$1" "$2" "$3"
}
cat > "$TMP/ng/nginx.conf" <<EOF
daemon off;
worker_processes $THREADS;
pid $TMP/ng/nginx.pid;
error_log $TMP/ng/logs/error.log warn;
events { worker_connections 4096; multi_accept on; }
http {
    access_log off;
    client_body_temp_path $TMP/ng/tmp/body;
    proxy_temp_path $TMP/ng/tmp/proxy;
    client_body_buffer_size 1m;
    client_max_body_size 64m;
    keepalive_requests 1000000;
    upstream up1 { server 127.0.0.1:$U1; keepalive 64; keepalive_requests 1000000; }
    upstream up2 { server 127.0.0.1:$U2; keepalive 64; keepalive_requests 1000000; }
    upstream up3 { server 127.0.0.1:$U3; keepalive 64; }
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_request_buffering on;
    proxy_buffering off;
    proxy_ssl_trusted_certificate $P/ca.pem;
    proxy_ssl_verify on;
    proxy_ssl_name localhost;
    proxy_ssl_server_name on;
    proxy_ssl_session_reuse on;
    server {
        listen 127.0.0.1:$NP reuseport;
$(loc /h1/ up1 /)
$(loc /h1tcs/ up1 /tcs/)
$(loc /h1sse/ up1 /sse/)
$(loc /h2/ up2 /)
$(loc /h2tcs/ up2 /tcs/)
$(loc /close/ up3 /)
    }
}
EOF
start_ng() {
    nginx -p "$TMP/ng" -c "$TMP/ng/nginx.conf" > "$TMP/ng/logs/stdout" 2>&1 &
    NG_PID=$!
    sleep 0.3
    wait_http "http://127.0.0.1:$NP/h1/v1/chat/completions" || true
    NG_PIDS="$NG_PID $(children "$NG_PID" | tr '\n' ' ')"
}

# ---- toolgate
TP=$(free_port 19300)
route() { # NAME PORT BASE
    printf '[route %s]\nprefix = /%s\nupstream = https://127.0.0.1:%s%s\ndialect = openai\ntls_ca_file = %s\n\n' \
        "$1" "$1" "$2" "$3" "$P/ca.pem"
}
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = %s\naccess_log = %s\nlog_level = %s\nmax_body = 64M\nforward_headers = x-mock*\nmax_conns_per_ip = 0\n\n' "$TP" "$THREADS" "${BENCH_HTTPS_ACCESS_LOG:-off}" "${BENCH_HTTPS_LOG:-warn}"
    route h1 "$U1" /v1
    route h1tcs "$U1" /tcs/v1
    route h1sse "$U1" /sse/v1
    route h2 "$U2" /v1
    route h2tcs "$U2" /tcs/v1
    route close "$U3" /v1
} > "$TMP/toolgate.conf"
start_tg() {
    "$TG" serve -c "$TMP/toolgate.conf" > "$TMP/toolgate.out" 2>> "$TMP/toolgate.err" &
    TG_PID=$!
    wait_http "http://127.0.0.1:$TP/readyz" || die "toolgate did not start: $(cat "$TMP/toolgate.err")"
}
start_ng
start_tg
for s in h1 h2 close; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$B/small.json" \
        "http://127.0.0.1:$TP/$s/v1/chat/completions")" = 200 ] || die "toolgate /$s: $(tail -3 "$TMP/toolgate.err")"
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$B/small.json" \
        "http://127.0.0.1:$NP/$s/v1/chat/completions")" = 200 ] || die "nginx /$s: $(tail -3 "$TMP/ng/logs/error.log")"
done
log "upstream :$U1 (h1) :$U2 (h2) :$U3 (close)  nginx :$NP  toolgate :$TP  tmp $TMP"

# ---- runs
RES=$TMP/results
: > "$RES"
put() { echo "$1 $2" >> "$RES"; }
url() { # SYSTEM PREFIX PATH
    case $1 in
    direct) case $2 in h1) echo "https://127.0.0.1:$U1$3" ;; h1tcs) echo "https://127.0.0.1:$U1/tcs$3" ;;
        h1sse) echo "https://127.0.0.1:$U1/sse$3" ;; h2) echo "https://127.0.0.1:$U2$3" ;;
        h2tcs) echo "https://127.0.0.1:$U2/tcs$3" ;; close) echo "https://127.0.0.1:$U3$3" ;; esac ;;
    nginx) echo "http://127.0.0.1:$NP/$2$3" ;;
    toolgate) echo "http://127.0.0.1:$TP/$2$3" ;;
    esac
}
pids() {
    case $1 in direct) echo "$UP_PID $(children "$UP_PID" | tr '\n' ' ')" ;; nginx) echo "$NG_PIDS" ;; toolgate) echo "$TG_PID" ;; esac
}
wrk_run() { # SYSTEM PREFIX BODY CONNS SECONDS -> "rps p99 cpu_us"
    pp=$(pids "$1")
    # shellcheck disable=SC2086
    t0=$(cpu_ticks $pp)
    BODY="$B/$3" wrk -t2 -c"$4" -d"$5s" --timeout 10s -s bench/post.lua "$(url "$1" "$2" /v1/chat/completions)" \
        > "$TMP/wrk.out" 2>&1 < /dev/null
    # shellcheck disable=SC2086
    t1=$(cpu_ticks $pp)
    line=$(grep '^RESULT' "$TMP/wrk.out")
    [ -n "$line" ] || { log "wrk failed: $1 $2: $(tail -3 "$TMP/wrk.out")"; echo "- - -"; return; }
    n=$(field "$line" requests)
    e=$(($(field "$line" errors) + $(field "$line" non2xx)))
    [ "$e" = 0 ] || log "$1 $2 $3: $e errors or non-2xx: $(grep -E "Socket errors|Non-2xx" "$TMP/wrk.out" | tr "\n" " ")"
    echo "$(field "$line" rps) $(field "$line" p99) $(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$CLK_TCK" \
        'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / hz / n; else print "-" }')"
}
ROWS="${BENCH_HTTPS_ROWS:-small:h1:small.json big100:h1:big100.json stream:h1sse:stream.json toolcall:h1tcs:toolstream.json small-h2:h2:small.json toolcall-h2:h2tcs:toolstream.json}"
for row in $ROWS; do  # warm-up: pools, caches, sessions
    IFS=: read -r name pre body <<EOF
$row
EOF
    for s in direct nginx toolgate; do
        BODY="$B/$body" wrk -t2 -c64 -d1s --timeout 10s -s bench/post.lua "$(url $s "$pre" /v1/chat/completions)" >/dev/null 2>&1 < /dev/null
    done
done
rep=1
while [ $rep -le "$REPS" ]; do
    for row in $ROWS; do
        IFS=: read -r name pre body <<EOF
$row
EOF
        for s in direct nginx toolgate; do
            set -- $(wrk_run $s "$pre" "$body" 64 "$DUR")
            put "$name.$s.rps.$rep" "$1"; put "$name.$s.cpu.$rep" "$3"
            log "rep $rep $(printf '%-12s %-9s' "$name" "$s") rps=$1 p99=$2 cpu_us=$3"
        done
    done
    # one new upstream connection: every answer of :U3 closes its connection
    for s in nginx toolgate; do
        set -- $(wrk_run $s close small.json 16 "$DUR")
        put "close.$s.cpu.$rep" "$3"; put "close.$s.rps.$rep" "$1"
        set -- $(wrk_run $s h1 small.json 16 "$DUR")
        put "warm16.$s.cpu.$rep" "$3"
        log "rep $rep new-connection $s close_cpu=$(awk -v k="close.$s.cpu.$rep" '$1 == k { print $2 }' "$RES") warm_cpu=$3"
    done
    # a freshly started process, 64 connections at once, its first 3 s
    kill "$TG_PID"; wait "$TG_PID" 2>/dev/null
    start_tg
    set -- $(wrk_run toolgate h1 small.json 64 3)
    put "fresh.toolgate.rps.$rep" "$1"; put "fresh.toolgate.p99.$rep" "$2"
    kill -QUIT "$NG_PID"; wait "$NG_PID" 2>/dev/null
    start_ng
    set -- $(wrk_run nginx h1 small.json 64 3)
    put "fresh.nginx.rps.$rep" "$1"; put "fresh.nginx.p99.$rep" "$2"
    log "rep $rep fresh: toolgate $(awk -v r="$rep" '$1 ~ /^fresh\.toolgate\./ && $1 ~ "\\." r "$" { printf "%s=%s ", $1, $2 }' "$RES")nginx rps=$1 p99=$2"
    rep=$((rep + 1))
done

# ---- the table: medians over the repetitions, ratios per repetition
vals() { awk -v k="$1" 'index($1, k ".") == 1 && $1 ~ /\.[0-9]+$/ { print $2 }' "$RES"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# ratio of A to B per repetition: "median (min-max)"
ratios() { # KEY_A KEY_B
    i=1
    while [ $i -le "$REPS" ]; do
        a=$(awk -v k="$1.$i" '$1 == k { print $2 }' "$RES"); b=$(awk -v k="$2.$i" '$1 == k { print $2 }' "$RES")
        awk -v a="$a" -v b="$b" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f\n", a / b }'
        i=$((i + 1))
    done | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f (%.2f-%.2f)\n", m, v[1], v[NR] }'
}
verdict() { # "ratio (spread)" le|ge target
    awk -v r="${1%% *}" -v op="$2" -v t="$3" 'BEGIN { if (r == "-") print "-"; else if ((op == "le" && r <= t) || (op == "ge" && r >= t)) print "ok"; else print "missed" }'
}
newconn() { # SYSTEM: median over reps of (close cpu - warm cpu) in µs
    i=1
    while [ $i -le "$REPS" ]; do
        a=$(awk -v k="close.$1.cpu.$i" '$1 == k { print $2 }' "$RES"); b=$(awk -v k="warm16.$1.cpu.$i" '$1 == k { print $2 }' "$RES")
        awk -v a="$a" -v b="$b" 'BEGIN { if (a != "" && b != "" && a != "-" && b != "-") printf "%.0f\n", a - b }'
        i=$((i + 1))
    done | median
}
{
    echo "### https upstream (headline)"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), git $(git rev-parse --short HEAD 2>/dev/null), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg);"
    echo "\`sh bench/https.sh\` (part of \`make bench\`): medians of $REPS interleaved runs of $DUR s at 64 connections,"
    echo "ratio spread (min-max) in brackets. Upstream: nginx over TLS (private CA, RSA 2048), HTTP/1.1"
    echo "or h2 offered; nginx proxies with proxy_ssl_verify and upstream keepalive 64; toolgate with tls_ca_file."
    echo
    echo "| row | direct | nginx | toolgate | tg/nginx | target | |"
    echo "|---|---:|---:|---:|---:|---|---|"
    for row in $ROWS; do
        name=${row%%:*}
        r=$(ratios "$name.toolgate.rps" "$name.nginx.rps")
        echo "| $name: requests/s | $(vals "$name.direct.rps" | median) | $(vals "$name.nginx.rps" | median) | $(vals "$name.toolgate.rps" | median) | $r | ≥ 0.8 × nginx | $(verdict "$r" ge 0.8) |"
        c=$(ratios "$name.toolgate.cpu" "$name.nginx.cpu")
        echo "| $name: CPU µs/request | $(vals "$name.direct.cpu" | median) | $(vals "$name.nginx.cpu" | median) | $(vals "$name.toolgate.cpu" | median) | $c | ≤ 1.6 × nginx | $(verdict "$c" le 1.6) |"
    done
    tn=$(newconn toolgate); nn=$(newconn nginx)
    echo "| one new upstream connection: CPU µs (close-each minus warm, 16 conns) | - | $nn | $tn | | ≤ 2,000 | $(awk -v t="$tn" 'BEGIN { print (t != "-" && t + 0 <= 2000) ? "ok" : "missed" }') |"
    fr=$(ratios fresh.toolgate.rps fresh.nginx.rps)
    echo "| fresh process, first 3 s at 64 conns: requests/s | - | $(vals fresh.nginx.rps | median) | $(vals fresh.toolgate.rps | median) | $fr | | |"
    fp=$(ratios fresh.toolgate.p99 fresh.nginx.p99)
    echo "| fresh process, first 3 s at 64 conns: p99 µs | - | $(vals fresh.nginx.p99 | median) | $(vals fresh.toolgate.p99 | median) | $fp | ≤ 2 × nginx | $(verdict "$fp" le 2) |"
} > "$TMP/table.md"
if [ -n "$OUTMD" ]; then cp "$TMP/table.md" "$OUTMD"; else cat "$TMP/table.md"; fi
