# bench/lib.sh -- what bench/run.sh, bench/profile.sh and bench/toolstream.sh
# share: ports, waiting, the mock, the tool-call stream and toolgate's
# stream routes. Sourced; the caller defines die() and sets TMP and MOCK.

# A port nothing answers on (curl exit 7 = connection refused).
free_port() {
    local p
    p=$1
    while :; do
        curl -s -o /dev/null -m 1 "http://127.0.0.1:$p/"
        [ $? -eq 7 ] && break
        p=$((p + 1))
    done
    echo "$p"
}

wait_http() { # URL [TRIES]: until it answers 200, TRIES x 0.1 s (50)
    local i
    i=0
    while [ $i -lt "${2:-50}" ]; do
        [ "$(curl -s -o /dev/null -w '%{http_code}' -m 1 "$1")" = 200 ] && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}

start_mock() { # sets MOCK_PID and MP (its port)
    "$MOCK" --listen 127.0.0.1:0 > "$TMP/mock.out" 2> "$TMP/mock.err" &
    MOCK_PID=$!
    local i
    i=0
    while ! grep -q '^port=' "$TMP/mock.out" 2>/dev/null; do
        sleep 0.05; i=$((i + 1)); [ $i -gt 100 ] && die "mock did not start: $(cat "$TMP/mock.err")"
    done
    MP=$(sed -n 's/^port=//p' "$TMP/mock.out")
}

# The tool-call stream (issue 20): the mock's one call in 20 argument
# fragments, for BODY, written to FILE (served whole by a static nginx).
capture_toolcall() { # BODY FILE
    curl -s -H 'Content-Type: application/json' -H 'X-Mock: parallel' -H 'X-Mock-Calls: 1' \
        -H 'X-Mock-Arg-Pieces: 20' --data-binary @"$1" \
        "http://127.0.0.1:$MP/v1/chat/completions" > "$2"
    grep -q '"arguments"' "$2" || die "mock's tool-call stream: $(head -c 300 "$2")"
}

# toolgate's routes for the stream rows and the JSON upstream: /sse to the
# mock (port MP), /tcs to the static tool-call stream and the rest to the
# JSON upstream (port SP), all dialect openai.
stream_routes() {
    cat <<ROUTES
[route sse]
models = sse-bench-*
prefix = /sse
upstream = http://127.0.0.1:$MP/v1
dialect = openai

[route tcs]
models = tcs-bench-*
prefix = /tcs
upstream = http://127.0.0.1:$SP/tcs/v1
dialect = openai

[route gtcs]
models = gtcs-bench-*
prefix = /gtcs
upstream = http://127.0.0.1:$SP/gtcs/v1
dialect = gemini

[route json]
models = *
upstream = http://127.0.0.1:$SP/v1
dialect = openai
ROUTES
}

static_nginx_conf() { # WORKERS: the JSON and tool-call upstream's nginx.conf
    # ($TMP/static, port $SP): $ANSWER at /, the captured tool-call stream
    # $TMP/static/tcs.sse at /tcs/ and /gtcs/ (the toolcall-gemini row's
    # path: the same stream through a dialect = gemini route; a POST to a static file is a 405 in
    # nginx: error_page turns it into the file)
    cat <<EOF
daemon off;
worker_processes $1;
pid $TMP/static/nginx.pid;
error_log $TMP/static/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $TMP/static/body;
    keepalive_requests 1000000;
    client_max_body_size 64m;
    default_type application/json;
    server {
        listen 127.0.0.1:$SP reuseport;
        location / { return 200 '$ANSWER'; }
        location /tcs/ { error_page 405 =200 /tcs.sse; return 405; }
        location /gtcs/ { error_page 405 =200 /tcs.sse; return 405; }
        location = /tcs.sse { internal; default_type text/event-stream; root $TMP/static; }
    }
}
EOF
}
