#!/bin/sh
# own_client.sh -- toolgate's own HTTP/1.1 client (proxy/upconn.c, the
# parser proxy/h1.c), which carries chat rounds to plain-http upstreams: which rounds take it (the mock sees Accept-Encoding: identity
# from it, libcurl's list otherwise), the headers it sends, one kept-alive
# connection for many rounds, and every framing and fault a real server
# may answer with (h1_upstream.py writes them byte by byte): Content-Length,
# chunked with extensions and trailers, 1xx heads, bare LF, until-close,
# HTTP/1.0, a kept-alive connection the server dropped, a gzip'd answer
# (the round again through libcurl, and that upstream's next rounds), bad chunks, a bad status line, short
# bodies, nothing at all, a head past 300 KB, an error status, an answer
# sent before the body was read (413, then a close), a kept-alive
# connection closed unanswered while new connects hang, a refused
# connection; then upstream_client = curl, and a host name learned from
# libcurl's first round.
. "$(dirname "$0")/lib.sh"

start_mock
start_script_upstream h1 "$TG_ROOT/test/integration/h1_upstream.py"
H1_PID=$UP_PID
HPORT=$UP_PORT
export H1_ONE_CONN=1
start_script_upstream h1one "$TG_ROOT/test/integration/h1_upstream.py"
unset H1_ONE_CONN
ONE_PID=$UP_PID
ONE_PORT=$UP_PORT
trap '_st=$?; kill $H1_PID $ONE_PID 2>/dev/null; (exit $_st); stop_all' EXIT
DEAD=$(free_port)

write_conf() {  # write_conf FILE [SERVER LINES]
    {
        printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = info\nforward_headers = x-mock*\n%s\n\n' "$PORT" "$2"
        conf_route mock "gpt-*" "api_key = sk-own-test"
        printf '[route named]\nprefix = /named\nupstream = http://localhost:%s/v1\ndialect = openai\n\n' "$MOCK_PORT"
        printf '[route dead]\nmodels = dead-*\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nretries = 0\n\n' "$DEAD"
        printf '[route early]\nprefix = /early\nupstream = http://127.0.0.1:%s/early/v1\ndialect = openai\nretries = 0\n\n' "$HPORT"
        printf '[route once]\nprefix = /once\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nretries = 0\nconnect_timeout = 1s\nttfb_timeout = 8s\n\n' "$ONE_PORT"
        printf '[route total]\nprefix = /total\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nretries = 0\ntimeout = 1s\n\n' "$HPORT"
        printf '[route raw]\nmodels = *\nupstream = http://127.0.0.1:%s/v1\ndialect = openai\nretries = 0\n\n' "$HPORT"
    } >"$1"
}
PORT=$(free_port)
write_conf "$TG_TMP/own.conf"
start_toolgate "$TG_TMP/own.conf" || exit 1

stream_req() {  # stream_req OUT MODEL [PATH]: a streamed chat request; prints the status
    tg_req "$1" POST "${3:-/v1/chat/completions}" -H 'Content-Type: application/json' \
        --data-binary "{\"model\":\"$2\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
}
content_of() {  # the streamed content, and DONE when the stream ended with [DONE]
    "$PY" - "$1" <<'EOF'
import json, sys
text, done = "", False
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.strip()
    if line == "data: [DONE]":
        done = True
    elif line.startswith("data: "):
        try:
            c = json.loads(line[6:])
        except ValueError:
            continue
        for ch in c.get("choices") or []:
            text += (ch.get("delta") or {}).get("content") or ""
print(text + (" DONE" if done else ""))
EOF
}
"$PY" -c 'import json; print(json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "x" * (4 << 20)}]}))' >"$TG_TMP/big.json"
sed 's/"model": "m"/"model": "length"/' "$TG_TMP/big.json" >"$TG_TMP/big-length.json"
early_req() {  # early_req OUT: a 4 MB streamed request the upstream refuses unread (413)
    tg_req "$1" POST /early/chat/completions -H 'Content-Type: application/json' --data-binary "@$TG_TMP/big.json"
}
h1_stats() {  # h1_stats FIELD
    curl -s -m 5 "http://127.0.0.1:$HPORT/_stats" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"
}

# ---- which rounds take it, and what they send --------------------------------
mock_reset
code=$(stream_req "$TG_TMP/s1" gpt-4o)
mock_last "$TG_TMP/last"
expect_eq "streamed chat round to the mock: 200" 200 "$code"
expect_eq "streamed round goes over toolgate's own client (Accept-Encoding: identity)" identity \
    "$(json_get "$TG_TMP/last" headers.accept-encoding)"
expect_eq "own client: the route's key as Authorization" "Bearer sk-own-test" \
    "$(json_get "$TG_TMP/last" headers.authorization)"
expect_eq "own client: a chat body goes as application/json" "application/json" \
    "$(json_get "$TG_TMP/last" headers.content-type)"
expect_eq "own client: Accept as libcurl sends it" "*/*" "$(json_get "$TG_TMP/last" headers.accept)"
rid=$(json_get "$TG_TMP/last" headers.x-request-id)
expect_eq "own client: X-Request-Id upstream is the one the client got" "$(header_value "$TG_TMP/s1.h" X-Request-Id)" "$rid"
expect_eq "own client: the body the model read" gpt-4o "$(json_get "$TG_TMP/last" body.model)"
if grep -q '\[DONE\]' "$TG_TMP/s1"; then ok "own client: the stream reached the client whole"; else
    not_ok "own client: the stream reached the client whole" "$(head -c 400 "$TG_TMP/s1")"; fi
chat "$TG_TMP/w1" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
expect_eq "whole chat answers go over it too" identity "$(json_get "$TG_TMP/last" headers.accept-encoding)"
expect_eq "a whole answer over it reaches the client" "chat.completion" "$(json_get "$TG_TMP/w1" object)"
tg_req "$TG_TMP/p1" POST /v1/embeddings -H 'Content-Type: application/json' \
    --data-binary '{"model":"gpt-4o","input":"x"}' >/dev/null
mock_last "$TG_TMP/last"
ae=$(json_get "$TG_TMP/last" headers.accept-encoding)
case "$ae" in *gzip*) ok "a passed request (not chat) stays with libcurl ($ae)" ;;
*) not_ok "a passed request (not chat) stays with libcurl" "Accept-Encoding: $ae" ;; esac

# ---- framings ----------------------------------------------------------------
for mode in length chunked chunkext continue lf untilclose http10; do
    code=$(stream_req "$TG_TMP/m" "$mode")
    got=$(content_of "$TG_TMP/m")
    if [ "$code" = 200 ] && [ "$got" = "hello DONE" ]; then ok "framing $mode: the stream whole"; else
        not_ok "framing $mode: the stream whole" "status $code, got '$got': $(head -c 300 "$TG_TMP/m")"; fi
done
head=$(h1_stats head)
case "$head" in
"POST /v1/chat/completions HTTP/1.1"*) ok "request line: POST of the route's path, HTTP/1.1" ;;
*) not_ok "request line: POST of the route's path, HTTP/1.1" "$head" ;; esac
case "$head" in *"Host: 127.0.0.1:$HPORT"*) ok "Host: the route's authority" ;;
*) not_ok "Host: the route's authority" "$head" ;; esac
case "$head" in *"Expect:"*) not_ok "no Expect header (curl's removal is not sent as a header)" "$head" ;;
*) ok "no Expect header (curl's removal is not sent as a header)" ;; esac

# ---- a slow client: the round pauses, and reads again -----------------------------
for mode in biglength bigchunked; do
    curl -s -N -m 30 --limit-rate 8m -o "$TG_TMP/big" -H 'Content-Type: application/json' \
        --data-binary "{\"model\":\"$mode\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" \
        "$TG_URL/v1/chat/completions"
    got=$("$PY" - "$TG_TMP/big" <<'EOF2'
import json, sys
n, done = 0, False
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.strip()
    if line == "data: [DONE]":
        done = True
    elif line.startswith("data: "):
        for ch in json.loads(line[6:]).get("choices") or []:
            n += len((ch.get("delta") or {}).get("content") or "")
print(n, "DONE" if done else "")
EOF2
)
    expect_eq "a slow client of a big stream ($mode): every byte, paused and read again" "5000000 DONE" "$got"
done

# a 4 MB request goes out in several sends (EAGAIN, then EPOLLOUT); the
# upstream reads it whole (a cut body would not parse: its 500)
code=$(tg_req "$TG_TMP/m" POST /v1/chat/completions -H 'Content-Type: application/json' --data-binary "@$TG_TMP/big-length.json")
expect_eq "a 4 MB request body goes whole" "200 hello DONE" "$code $(content_of "$TG_TMP/m")"

# ---- one connection for many rounds ------------------------------------------
code=$(stream_req "$TG_TMP/m" length)  # a kept-alive connection in the pool
before=$(h1_stats conns)
n=0
for i in 1 2 3 4 5; do
    [ "$(stream_req "$TG_TMP/m" length)" = 200 ] && [ "$(content_of "$TG_TMP/m")" = "hello DONE" ] && n=$((n + 1))
done
after=$(h1_stats conns)
expect_eq "five rounds in a row answered" 5 "$n"
expect_eq "five rounds in a row on the one kept-alive connection (no new connection)" 0 $((after - before - 1))
# the pooled connection's TCP keepalive probes start after 60 s idle, as
# libcurl's do (the kernel's default is 2 h): its timer in /proc/net/tcp
ka=$("$PY" - "$HPORT" <<'EOF'
import sys
port = "%04X" % int(sys.argv[1])
best = None
for line in open("/proc/net/tcp").readlines()[1:]:
    f = line.split()
    if f[2].endswith(":" + port) and f[3] == "01":  # toolgate's end, established
        tr, when = f[5].split(":")
        if tr == "02":
            best = int(when, 16) // 100  # clock ticks (USER_HZ) to seconds
print(best)
EOF
)
case "$ka" in [0-9]*) [ "$ka" -le 60 ] && ok "pooled connection: keepalive after 60 s idle (${ka} s left)" ||
    not_ok "pooled connection: keepalive after 60 s idle" "timer ${ka} s" ;;
*) not_ok "pooled connection: keepalive after 60 s idle" "no keepalive timer on a connection to port $HPORT" ;; esac

# the server drops each connection right after answering (as an idle
# timeout would): every round still answered, on a new connection
n=0
for i in 1 2 3; do
    [ "$(stream_req "$TG_TMP/m" dropidle)" = 200 ] && [ "$(content_of "$TG_TMP/m")" = "hello DONE" ] && n=$((n + 1))
done
expect_eq "a kept-alive connection the server dropped: three rounds answered" 3 "$n"

# the server closes a kept-alive connection as the next request arrives
# (its idle timeout and the request crossed): sent once more on a new
# connection, as libcurl does, and answered
before=$(h1_stats conns)
n=0
for i in 1 2; do
    [ "$(stream_req "$TG_TMP/m" closesecond)" = 200 ] && [ "$(content_of "$TG_TMP/m")" = "hello DONE" ] && n=$((n + 1))
done
after=$(h1_stats conns)
expect_eq "a kept-alive connection closed as a request went out: sent again, answered" "2" "$n"
expect_eq "... the second on the first one's kept-alive connection, closed, then on a new one" \
    "1 2" "$(h1_stats dropped) $((after - before - 1))"

# ---- faults --------------------------------------------------------------------
for mode in badchunk short; do
    code=$(stream_req "$TG_TMP/m" "$mode")
    if [ "$code" = 200 ] && grep -q '"code":"stream_truncated"' "$TG_TMP/m"; then
        ok "$mode: the stream ends with the error event of a cut stream"
    else
        not_ok "$mode: the stream ends with the error event of a cut stream" "status $code: $(head -c 400 "$TG_TMP/m")"
    fi
done
for mode in badstatus nothing; do
    code=$(stream_req "$TG_TMP/m" "$mode")
    if [ "$code" = 502 ] && grep -q upstream_unreachable "$TG_TMP/m"; then ok "$mode: 502 upstream_unreachable"; else
        not_ok "$mode: 502 upstream_unreachable" "status $code: $(head -c 300 "$TG_TMP/m")"; fi
done
# a 400 KB head: past what toolgate passes on to its client (6 KB) long
# before libcurl's 300 KB bound (adversary/upstream.sh has the 20 KB line)
code=$(stream_req "$TG_TMP/m" hugehead)
if [ "$code" = 502 ] && grep -q upstream_head_too_large "$TG_TMP/m"; then ok "hugehead: 502 upstream_head_too_large"; else
    not_ok "hugehead: 502 upstream_head_too_large" "status $code: $(head -c 300 "$TG_TMP/m")"; fi
code=$(stream_req "$TG_TMP/m" error429)
if [ "$code" = 429 ] && grep -q "slow down" "$TG_TMP/m"; then ok "an error status on a stream: relayed with the provider's words"; else
    not_ok "an error status on a stream: relayed with the provider's words" "status $code: $(head -c 300 "$TG_TMP/m")"; fi
# the upstream answers from the head and closes with the body unread (as
# nginx's client_max_body_size does): the client reads that answer, as it
# did through libcurl, not a failed send
code=$(early_req "$TG_TMP/m")
if [ "$code" = 413 ] && grep -q "body too large" "$TG_TMP/m"; then ok "an answer before the body was read: relayed (413)"; else
    not_ok "an answer before the body was read: relayed (413)" "status $code: $(head -c 300 "$TG_TMP/m")"; fi
# a kept-alive connection closed with the request unanswered: the round
# goes again on a new connection, whose connect is bounded by
# connect_timeout as the first one's was (the upstream's accept queue is
# full: the connect hangs)
code=$(stream_req "$TG_TMP/m" length /once/chat/completions)
expect_eq "one-connection upstream: the first round answered" "200 hello DONE" "$code $(content_of "$TG_TMP/m")"
code=$(stream_req "$TG_TMP/m" length /once/chat/completions)
if [ "$code" = 504 ] && grep -q "timed out (connect_timeout)" "$TG_LOG"; then
    ok "the round sent again on a new connection: connect_timeout bounds its connect (504)"
else
    not_ok "the round sent again on a new connection: connect_timeout bounds its connect (504)" \
        "status $code: $(grep "timed out" "$TG_LOG" | tail -n 2)"
fi
code=$(stream_req "$TG_TMP/m" dead-1)
if [ "$code" = 502 ] && grep -q "connect" "$TG_TMP/m"; then ok "a refused connection: 502 naming it"; else
    not_ok "a refused connection: 502 naming it" "status $code: $(head -c 300 "$TG_TMP/m")"; fi
signature() {  # what a client reads of a fault: status, content, error codes
    printf '%s %s %s' "$1" "$(content_of "$2")" "$(grep -o '"code":"[a-z_]*"' "$2" | sort -u | tr '\n' ' ')"
}
for mode in badchunk short badstatus nothing hugehead error429 untilclose; do
    code=$(stream_req "$TG_TMP/m" "$mode")
    signature "$code" "$TG_TMP/m" >"$TG_TMP/own.$mode"
done
# timeout (total_timeout_ms, 1 s) cuts a stream that runs 3 s, as libcurl's timer does
cut_signature() {  # what a client reads of a cut stream, but how much came before the cut
    printf '%s %s %s' "$1" "$(content_of "$2" | sed 's/^\(hel\)*/hel.../')" "$(grep -o '"code":"[a-z_]*"' "$2" | sort -u | tr '\n' ' ')"
}
code=$(stream_req "$TG_TMP/m" drip /total/chat/completions)
cut_signature "$code" "$TG_TMP/m" >"$TG_TMP/own.drip"
case "$(cat "$TG_TMP/own.drip")" in
"200 hel... DONE "*'"code":"upstream_timeout"'* | "200 hel... DONE "*'"code":"stream_truncated"'*)
    ok "total_timeout cuts a long stream (the error event of a cut stream)" ;;
*) not_ok "total_timeout cuts a long stream (the error event of a cut stream)" "$(cat "$TG_TMP/own.drip")" ;; esac
code=$(stream_req "$TG_TMP/m" length)
expect_eq "after every fault, the next round answered" "200 hello DONE" "$code $(content_of "$TG_TMP/m")"

# ---- an answer encoded unasked (last: its upstream then stays with libcurl) ----
code=$(stream_req "$TG_TMP/m" gzip)
got=$(content_of "$TG_TMP/m")
if [ "$code" = 200 ] && [ "$got" = "hello DONE" ]; then ok "a gzip'd stream nobody asked for: the round again through libcurl, decoded"; else
    not_ok "a gzip'd stream nobody asked for: the round again through libcurl, decoded" "status $code, got '$got'"; fi
if grep -q "content coding unasked" "$TG_LOG"; then ok "the unasked coding is logged"; else
    not_ok "the unasked coding is logged" "$(tail -n 5 "$TG_LOG")"; fi

code=$(stream_req "$TG_TMP/m" length)
head=$(h1_stats head)
case "$head" in *"Accept-Encoding: identity"*) not_ok "after it, that upstream's rounds go through libcurl" "$head" ;;
*gzip*) ok "after it, that upstream's rounds go through libcurl" ;;
*) not_ok "after it, that upstream's rounds go through libcurl" "$head" ;; esac
expect_eq "and are answered" "200 hello DONE" "$code $(content_of "$TG_TMP/m")"

# ---- a host name: libcurl's first round, then toolgate's own -------------------
mock_reset
stream_req "$TG_TMP/n1" gpt-4o /named/chat/completions >/dev/null
mock_last "$TG_TMP/last"
first=$(json_get "$TG_TMP/last" headers.accept-encoding)
stream_req "$TG_TMP/n2" gpt-4o /named/chat/completions >/dev/null
mock_last "$TG_TMP/last"
second=$(json_get "$TG_TMP/last" headers.accept-encoding)
if [ "$first" != identity ] && [ "$second" = identity ]; then
    ok "a named host: libcurl resolves it first, the next round goes direct"
else
    not_ok "a named host: libcurl resolves it first, the next round goes direct" "first '$first', second '$second'"
fi
if grep -q '\[DONE\]' "$TG_TMP/n2"; then ok "the named host's stream whole"; else
    not_ok "the named host's stream whole" "$(head -c 300 "$TG_TMP/n2")"; fi
stop_toolgate

# ---- upstream_client = curl ----------------------------------------------------------
PORT=$(free_port)
write_conf "$TG_TMP/curl.conf" "upstream_client = curl"
start_toolgate "$TG_TMP/curl.conf" || exit 1
mock_reset
stream_req "$TG_TMP/c1" gpt-4o >/dev/null
mock_last "$TG_TMP/last"
ae=$(json_get "$TG_TMP/last" headers.accept-encoding)
case "$ae" in identity | "") not_ok "upstream_client = curl: streamed rounds through libcurl" "Accept-Encoding: '$ae'" ;;
*) ok "upstream_client = curl: streamed rounds through libcurl ($ae)" ;; esac
chat "$TG_TMP/w2" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' >/dev/null
mock_last "$TG_TMP/last"
ae=$(json_get "$TG_TMP/last" headers.accept-encoding)
case "$ae" in *gzip*) ok "upstream_client = curl: whole answers through libcurl, which decodes ($ae)" ;;
*) not_ok "upstream_client = curl: whole answers through libcurl, which decodes" "Accept-Encoding: '$ae'" ;; esac
for mode in chunkext continue; do
    code=$(stream_req "$TG_TMP/m" "$mode")
    expect_eq "upstream_client = curl: framing $mode alike" "200 hello DONE" "$code $(content_of "$TG_TMP/m")"
done
code=$(early_req "$TG_TMP/m")
if [ "$code" = 413 ] && grep -q "body too large" "$TG_TMP/m"; then ok "upstream_client = curl: an answer before the body was read, relayed alike"; else
    not_ok "upstream_client = curl: an answer before the body was read, relayed alike" "status $code: $(head -c 300 "$TG_TMP/m")"; fi
# what the client reads of each fault is what it read through libcurl
code=$(stream_req "$TG_TMP/m" drip /total/chat/completions)
expect_eq "total_timeout: the client reads the same as through libcurl" "$(cut_signature "$code" "$TG_TMP/m")" \
    "$(cat "$TG_TMP/own.drip")"
for mode in badchunk short badstatus nothing hugehead error429 untilclose; do
    code=$(stream_req "$TG_TMP/m" "$mode")
    expect_eq "fault $mode: the client reads the same as through libcurl" "$(signature "$code" "$TG_TMP/m")" \
        "$(cat "$TG_TMP/own.$mode")"
done
stop_toolgate
finish
