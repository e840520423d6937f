#!/bin/sh
# tls.sh -- https upstreams: whom toolgate trusts and what it shows.
#
# A private CA made here (openssl) signs a certificate for 127.0.0.1, one
# for another host name, and a client certificate; tls_upstream.py serves
# chat completions over TLS with each (one of them asks for the client
# certificate). Checked: a route's tls_ca_file trusts the private CA; with
# no CA setting the built-in bundle refuses it with a 502 that names the
# certificate problem; a certificate for another name is refused naming
# the name; [server]'s tls_ca_file and the environment's SSL_CERT_FILE are
# used when the route says nothing; tls_client_cert/key answer an mTLS
# upstream, which refuses toolgate without them; a new connection of the
# worker resumes the TLS session another connection opened, also after
# the upstream closed that one; the own client warms a connection per
# upstream before it is ready (also one named by host name, localhost,
# whose first round then goes over the own client with no full
# handshake), and a warm-up that cannot end (no handshake, a name that
# does not resolve) does not keep it unready; each of these
# on toolgate's own client (its TLS, proxy/uptls.c) and on libcurl
# (upstream_client = curl); `toolgate check`
# names a missing or empty CA file and a client key without certificate.
. "$(dirname "$0")/lib.sh"

if ! command -v openssl >/dev/null 2>&1; then
    not_ok "openssl is installed (.ci/deps.sh)"
    finish
fi
P=$TG_TMP/pki
mkdir -p "$P"
gen() {  # gen NAME CN SAN: a key and a certificate signed by the CA
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$P/$1.key" \
        -out "$P/$1.csr" 2>/dev/null &&
        printf 'subjectAltName=%s\n' "$3" >"$P/$1.ext" &&
        openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial \
            -days 2 -extfile "$P/$1.ext" -out "$P/$1.pem" 2>/dev/null
}
openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=toolgate test CA" -days 2 \
    -keyout "$P/ca.key" -out "$P/ca.pem" 2>/dev/null &&
    gen server 127.0.0.1 "IP:127.0.0.1,DNS:localhost" &&
    gen other other.example "DNS:other.example" &&
    gen client toolgate-client "DNS:toolgate-client"
check "a private CA and three certificates are made" test -s "$P/client.pem"

start_tls() {  # start_tls NAME CERT [CLIENT_CA]: sets UP_PID and UP_PORT
    start_script_upstream "$1" "$TG_ROOT/test/integration/tls_upstream.py" "$P/$2.pem" "$P/$2.key" $3
}
start_mock
start_tls good server
GOOD_PID=$UP_PID GOOD=$UP_PORT
start_tls other other
OTHER_PID=$UP_PID OTHER=$UP_PORT
start_tls mtls server "$P/ca.pem"
MTLS_PID=$UP_PID MTLS=$UP_PORT
trap '_st=$?; kill $GOOD_PID $OTHER_PID $MTLS_PID ${SILENT_PID:-} 2>/dev/null; (exit $_st); stop_all' EXIT

route() {  # route NAME PORT [LINES]
    printf '[route %s]\nprefix = /%s\nupstream = https://127.0.0.1:%s/v1\ndialect = openai\nretries = 0\n%s\n\n' \
        "$1" "$1" "$2" "$3"
}
ask() {  # ask OUT PREFIX: a whole chat request on the route; prints the status
    tg_req "$1" POST "/$2/v1/chat/completions" -H 'Content-Type: application/json' \
        --data-binary '{"model":"m","messages":[{"role":"user","content":"hi"}]}'
}
content() { json_get "$1" choices.0.message.content; }
has() { expect_match "$1" "$3" "$2"; }  # has NAME TEXT PATTERN

# The trust checks, once on toolgate's own client (chat rounds over its
# TLS, proxy/uptls.c) and once with every round through libcurl.
matrix() {  # matrix CLIENT VIA WARMED: upstream_client = CLIENT, rounds seen as sent by VIA
    PORT=$(free_port)
    {
        printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = info\nupstream_client = %s\n\n' "$PORT" "$1"
        route private "$GOOD" "tls_ca_file = $P/ca.pem"
        route builtin "$GOOD"
        route wrongname "$OTHER" "tls_ca_file = $P/ca.pem"
        route mtls "$MTLS" "tls_ca_file = $P/ca.pem
tls_client_cert = $P/client.pem
tls_client_key = $P/client.key"
        route nocert "$MTLS" "tls_ca_file = $P/ca.pem"
        printf '[route closing]\nprefix = /closing\nupstream = https://127.0.0.1:%s/close/v1\ndialect = openai\nretries = 0\ntls_ca_file = %s\n\n' "$GOOD" "$P/ca-copy.pem"
        printf '[route named]\nprefix = /named\nupstream = https://localhost:%s/close/v1\ndialect = openai\nretries = 0\ntls_ca_file = %s\n\n' "$GOOD" "$P/ca.pem"
    } >"$TG_TMP/tls-$1.conf"
    # The own client warms one connection per upstream and trust before
    # /readyz says ready (upstream_warm): the private, the closing and
    # the named routes' handshakes are done before any request (named's
    # address found by libcurl first); libcurl opens none.
    # (Each stats request is one handshake of its own.)
    w0=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    start_toolgate "$TG_TMP/tls-$1.conf" || exit 1
    w1=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    warmed=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[2])["handshakes"]-json.loads(sys.argv[1])["handshakes"]-1)' "$w0" "$w1")
    expect_eq "[$1] TLS connections to the upstream ready before the first request" "$warmed" "$3"

    # The named route (https://localhost, a host name): its first rounds
    # go over the own client, to the address the warm-up learnt, with no
    # full handshake -- the first takes the warm connection, which the
    # upstream then closes, and the next resumes its session. (Without
    # the warm-up the first round went through libcurl, and made the
    # worker's first full handshake to localhost.)
    before=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    sts=
    for i in 1 2; do
        sts="$sts$(ask "$TG_TMP/n$i" named) $(content "$TG_TMP/n$i" | sed 's/.*via=//');"
    done
    after=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    full=$("$PY" -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print((b["handshakes"]-b["resumed"])-(a["handshakes"]-a["resumed"])-1)' "$before" "$after")
    if [ "$1" = toolgate ]; then
        expect_eq "[$1] a host-named upstream's first rounds go over the own client" "$sts" "200 own;200 own;"
        expect_eq "[$1] ... with no full TLS handshake (the warm connection, then its session)" "$full" 0
    else
        expect_eq "[$1] a host-named upstream's rounds go through libcurl" "$sts" "200 curl;200 curl;"
    fi

    st=$(ask "$TG_TMP/a" private)
    expect_eq "[$1] tls_ca_file: the private CA's upstream answers" "$st $(content "$TG_TMP/a")" \
        "200 tls ok path=/v1/chat/completions client=- via=$2"

    st=$(ask "$TG_TMP/b" builtin)
    expect_eq "[$1] no CA setting: the built-in bundle refuses a private CA (502)" "$st" 502
    has "[$1] ... and the 502 names the certificate problem" "$(cat "$TG_TMP/b")" \
        'certificate problem|self-signed|unable to get local issuer'

    st=$(ask "$TG_TMP/c" wrongname)
    expect_eq "[$1] a certificate for another name is refused (502)" "$st" 502
    has "[$1] ... naming the host name" "$(cat "$TG_TMP/c")" 'host name|subject name|127\.0\.0\.1'

    st=$(ask "$TG_TMP/d" mtls)
    expect_eq "[$1] tls_client_cert/key: the mTLS upstream sees toolgate's certificate" \
        "$st $(content "$TG_TMP/d")" "200 tls ok path=/v1/chat/completions client=toolgate-client via=$2"

    st=$(ask "$TG_TMP/e" nocert)
    expect_eq "[$1] the mTLS upstream refuses toolgate without a client certificate (502)" "$st" 502

    # Session resumption: the first round's connection stays pooled; four
    # at once open new connections, which resume the session the worker
    # keeps (libcurl: its handles' share; the own client: uptls.c). (The
    # stats request is one more handshake, not resumed.)
    before=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    pids=
    for i in 1 2 3 4; do
        ask "$TG_TMP/p$i" private >"$TG_TMP/p$i.st" &
        pids="$pids $!"
    done
    wait $pids
    after=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    resumed=$("$PY" -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print(b["handshakes"]-a["handshakes"]-1, b["resumed"]-a["resumed"])' "$before" "$after")
    new=${resumed% *} res=${resumed#* }
    expect_eq "[$1] four rounds at once all answered" "$(cat "$TG_TMP"/p?.st)" 200200200200
    # At least one resumed: on a busy machine a connection may open before
    # the first one's ticket arrived, so "all resumed" is a race; none
    # resumed is the failure this checks.
    if [ "$new" -ge 1 ] && [ "$res" -ge 1 ]; then
        ok "[$1] new connections resume the worker's TLS session ($new new, $res resumed)"
    else
        not_ok "[$1] new connections resume the worker's TLS session" "stats before $before after $after"
    fi
    # One after the other on an upstream that closes every connection
    # after its answer: each new connection resumes the session the one
    # before left (its close sends no close_notify, and OpenSSL took
    # that for a bad session: uptls_close). The route trusts a copy of
    # the CA, so that its connections are a pool of their own (the
    # first round may take the warm one, or make the first handshake).
    before=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    sts=
    for i in 1 2 3; do
        sts="$sts$(ask "$TG_TMP/q$i" closing)"
    done
    after=$(curl -s -k "https://127.0.0.1:$GOOD/_stats")
    counts=$("$PY" -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); n=b["handshakes"]-a["handshakes"]-1; print(n, b["resumed"]-a["resumed"])' "$before" "$after")
    expect_eq "[$1] three rounds in a row on connections the upstream closes" "$sts" 200200200
    new=${counts% *} res=${counts#* }
    if [ "$new" -ge 2 ] && [ "$res" -ge $((new - 1)) ]; then
        ok "[$1] ... each new connection resumed the session ($new new, $res resumed)"
    else
        not_ok "[$1] ... each new connection resumed the session" "$new new, $res resumed: stats before $before after $after"
    fi
    stop_toolgate
}
cp "$P/ca.pem" "$P/ca-copy.pem"
matrix toolgate own 3
matrix curl curl 0

# A warm-up that cannot end (an upstream that takes the TCP connection and
# never answers the handshake) ends at the route's connect_timeout: toolgate
# becomes ready, says why in its log, and the route answers 504 as before.
# So does one whose host name does not resolve (.invalid never does).
start_script_upstream silent "$TG_ROOT/test/integration/tls_upstream.py" silent
SILENT_PID=$UP_PID
PORT=$(free_port)
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = info\n\n' "$PORT"
    route silent "$UP_PORT" "tls_ca_file = $P/ca.pem
connect_timeout = 300ms"
    printf '[route nohost]\nprefix = /nohost\nupstream = https://nonexistent.invalid/v1\ndialect = openai\nretries = 0\nconnect_timeout = 300ms\n\n'
} >"$TG_TMP/silent.conf"
start_toolgate "$TG_TMP/silent.conf" || exit 1
ok "an upstream that never completes the warm-up's handshake does not keep toolgate unready"
has "... its log says the route got no warm connection, and why" "$(cat "$TG_LOG")" \
    "route silent: no connection warmed before the first request: no TLS connection within 300 ms"
has "... and a host name that does not resolve is logged, naming the name" "$(cat "$TG_LOG")" \
    "route nohost: no connection warmed before the first request: (Could not resolve host: nonexistent\.invalid|Resolving timed out)"
st=$(ask "$TG_TMP/s" silent)
expect_eq "... and a request there ends as before, at connect_timeout (504)" "$st" 504
stop_toolgate
kill $SILENT_PID 2>/dev/null

# [server]'s tls_ca_file, then SSL_CERT_FILE, for a route that says nothing.
PORT=$(free_port)
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\ntls_ca_file = %s\n\n' "$PORT" "$P/ca.pem"
    route inherit "$GOOD"
} >"$TG_TMP/server.conf"
start_toolgate "$TG_TMP/server.conf" || exit 1
st=$(ask "$TG_TMP/f" inherit)
expect_eq "[server] tls_ca_file serves a route that names none" "$st" 200
stop_toolgate

PORT=$(free_port)
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\n\n' "$PORT"
    route fromenv "$GOOD"
} >"$TG_TMP/env.conf"
SSL_CERT_FILE=$P/ca.pem start_toolgate "$TG_TMP/env.conf" || exit 1
st=$(ask "$TG_TMP/g" fromenv)
expect_eq "SSL_CERT_FILE serves a conf that names no CA" "$st" 200
stop_toolgate

# toolgate check names what is wrong, with the line.
: >"$P/empty.pem"
bad() {  # bad NAME LINES: the route's conf, checked; prints the output
    { printf '[server]\nlisten = 127.0.0.1:1\n\n'; route "$1" "$GOOD" "$2"; } >"$TG_TMP/$1.conf"
    "$TG_BIN" check -c "$TG_TMP/$1.conf" >"$TG_TMP/$1.out" 2>&1
    _st=$?
    echo "$(tr '\n' ' ' <"$TG_TMP/$1.out") exit=$_st"
}
out=$(bad empty "tls_ca_file = $P/empty.pem")
has "check: an empty CA file is refused, naming the line" "$out" \
    "empty.conf:9: tls_ca_file '.*empty.pem': no PEM certificate.*exit=[1-9]"
out=$(bad missing "tls_ca_file = $P/nothere.pem")
has "check: a missing CA file is refused, naming the line" "$out" \
    "missing.conf:9: tls_ca_file '.*nothere.pem': No such file.*exit=[1-9]"
out=$(bad keyonly "tls_client_key = $P/client.key")
has "check: a client key without its certificate is refused" "$out" \
    "keyonly.conf:9: tls_client_key needs tls_client_cert.*exit=[1-9]"
out=$(SSL_CERT_FILE=$P/nothere.pem bad envmissing "")
has "check: a missing SSL_CERT_FILE is named as the environment's" "$out" \
    "SSL_CERT_FILE '.*nothere.pem' \\(environment\\): No such file.*exit=[1-9]"
out=$(bad fine "tls_ca_file = $P/ca.pem")
has "check: a good CA file passes" "$out" "exit=0"

finish
