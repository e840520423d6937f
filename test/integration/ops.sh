#!/bin/sh
# ops.sh -- what an operator relies on: make install (what the Dockerfile
# runs), SIGHUP reload (good and bad files), /metrics, retries and
# fallback, bad input of every kind answered with a clear 4xx while
# toolgate keeps serving, and no secret in any log.
. "$(dirname "$0")/lib.sh"

start_mock

# ---- make install, as the Dockerfile does it ---------------------------------
dest="$TG_TMP/dest"
if BUILD=build make -s -C "$TG_ROOT" install DESTDIR="$dest" PREFIX=/usr >"$TG_TMP/install.log" 2>&1; then
    ok "make install DESTDIR=... PREFIX=/usr"
else
    not_ok "make install DESTDIR=... PREFIX=/usr" "$(tail -n 20 "$TG_TMP/install.log")"
fi
check "install: binary runs" "$dest/usr/bin/toolgate" version
check "install: --help" sh -c "'$dest/usr/bin/toolgate' --help | grep -q 'toolgate check'"
check "install: default conf validates" "$dest/usr/bin/toolgate" check -c "$dest/etc/toolgate/toolgate.conf"
check "install: man page" test -s "$dest/usr/share/man/man1/toolgate.1"

# ---- secrets and the conf ----------------------------------------------------
SECRET_UP="sk-up-$(date +%s)-zzSECRETzz"
SECRET_CLIENT="ck-$(date +%s)-yySECRETyy"
export TG_IT_UP_KEY="$SECRET_UP" TG_IT_CLIENT_KEYS="$SECRET_CLIENT,other-key"
port=$(free_port)
conf="$TG_TMP/ops.conf"
write_conf() {  # write_conf EXTRA_ROUTE_TEXT
    {
        printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 2\nlog_level = debug\nmax_body = 1M\n' "$port"
        printf 'max_depth = 64\nmax_tools = 50\nclient_keys = ${TG_IT_CLIENT_KEYS}\n'
        printf 'forward_headers = x-mock*\n\n'
        printf '[route a]\nmodels = gpt-*\nupstream = http://127.0.0.1:%s/v1\napi_key = ${TG_IT_UP_KEY}\n' "$MOCK_PORT"
        printf 'retries = 2\nfallback = b\n\n'
        printf '[route b]\nprefix = /b\nupstream = http://127.0.0.1:%s/v1\ndialect = mistral\n\n' "$MOCK_PORT"
        printf '%s\n' "$1"
    } >"$conf"
}
write_conf ""
start_toolgate "$conf" || exit 1
# serve raises glibc's per-thread cache by executing itself again with
# GLIBC_TUNABLES (proxy/main.c): same pid, its own name, the tunable set
expect_match "serve runs with glibc.malloc.tcache_count set" "glibc\.malloc\.tcache_count=128" \
    "$(tr '\0' '\n' <"/proc/$TG_PID/environ" 2>/dev/null)"
expect_eq "...as the process it was started as, under its own name" toolgate \
    "$(cat "/proc/$TG_PID/comm" 2>/dev/null)"
AUTH="Authorization: Bearer $SECRET_CLIENT"
MSG='"messages":[{"role":"user","content":"hi"}]'

# ---- a kept-alive connection parked between its requests (issue 29) ----------
# libmicrohttpd 0.9.75 read a kept-alive connection to EAGAIN after each
# answer and took it out of its epoll set and back: two epoll_ctl and an
# empty read a request (18 and 8 for these ten). Parked between requests
# (proxy/front.c) and suspended after its run (proxy/request.c), ten
# requests on one connection make three epoll_ctl in all (the client
# socket's, the upstream socket's two) and no empty read.
if command -v strace >/dev/null 2>&1; then
    strace -f -e trace=epoll_ctl,recvfrom -o "$TG_TMP/park.strace" -p "$TG_PID" 2>"$TG_TMP/park.err" &
    st_pid=$!
    nt=$(ls "/proc/$TG_PID/task" | wc -l)
    i=0
    while [ "$(grep -c attached "$TG_TMP/park.err")" -lt "$nt" ] && [ $i -lt 100 ] &&
        kill -0 $st_pid 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    if grep -q attached "$TG_TMP/park.err"; then
        urls=""
        for i in 1 2 3 4 5 6 7 8 9 10; do urls="$urls $TG_URL/v1/chat/completions"; done
        curl -s -m 20 -w '%{http_code} ' -H "$AUTH" -H 'Content-Type: application/json' \
            --data-binary "{\"model\":\"gpt-4o\",$MSG}" $urls >"$TG_TMP/park.out"
        kill -INT $st_pid
        wait $st_pid
        expect_eq "ten requests on one kept-alive connection" "200 200 200 200 200 200 200 200 200 200" \
            "$(grep -o '[0-9][0-9][0-9] ' "$TG_TMP/park.out" | tr -d '\n' | sed 's/ $//')"
        n_ctl=$(grep -c 'epoll_ctl(' "$TG_TMP/park.strace")
        n_again=$(grep -c 'recvfrom.*EAGAIN' "$TG_TMP/park.strace")
        if [ "$n_ctl" -le 5 ] && [ "$n_again" -le 1 ]; then
            ok "...with at most 5 epoll_ctl and 1 empty read in all"
        else
            not_ok "...with at most 5 epoll_ctl and 1 empty read in all" \
                "got $n_ctl epoll_ctl, $n_again reads meeting EAGAIN"
        fi
    else
        kill $st_pid 2>/dev/null
        wait $st_pid 2>/dev/null
        ok "kept-alive connection parked # SKIP strace cannot attach: $(head -c 200 "$TG_TMP/park.err")"
    fi
else
    not_ok "kept-alive connection parked" "needs strace (.ci/deps.sh)"
fi
# ...and woken every way: its next request at once, after a pause (the
# sweep resumes it first), two requests in one write, a head in two
# parts, a request followed by the client's close of its side
expect_eq "a kept-alive connection's requests: at once, after a pause, pipelined, split, closing" \
    "200 200 200 200 200 200 200" "$(python3 "$TG_ROOT/test/integration/keepalive.py" "$TG_PORT" "Bearer $SECRET_CLIENT" 2>&1)"

code=$(chat "$TG_TMP/r" "{\"model\":\"gpt-4o\",$MSG}" -H "$AUTH")
expect_eq "client key accepted" 200 "$code"
mock_last "$TG_TMP/last"
expect_eq "route api_key replaces the client's key upstream" "Bearer $SECRET_UP" \
    "$(json_get "$TG_TMP/last" headers.authorization)"
code=$(chat "$TG_TMP/r" "{\"model\":\"gpt-4o\",$MSG}" -H "Authorization: Bearer wrong")
expect_eq "wrong client key: 401" 401 "$code"

# ---- `toolgate rewrite` prints the very bytes the proxy sends ------------------
printf '%s' '{"model":"gpt-4o","tools":[{"type":"function","function":{"name":"read.file","parameters":{"type":"object","properties":{"p":{"type":"string"}}}}}],"messages":[{"role":"user","content":"hi","_mark":1}],"temperature":0.7}' >"$TG_TMP/rw.json"
chat "$TG_TMP/r" "$(cat "$TG_TMP/rw.json")" -H "$AUTH" >/dev/null
mock_last "$TG_TMP/last"
"$TG_BIN" rewrite -c "$conf" --route a "$TG_TMP/rw.json" >"$TG_TMP/rw.out" 2>"$TG_TMP/rw.err"
expect_eq "rewrite prints exactly the body sent upstream" "$(json_get "$TG_TMP/last" body)" "$(cat "$TG_TMP/rw.out")"
# ...and refuses what serve refuses, with the same OpenAI-shaped error.
printf '%s' '{"model":"gpt-4o","tools":[{"type":"function"}],"messages":[]}' >"$TG_TMP/rwbad.json"
st=$(chat "$TG_TMP/r" "$(cat "$TG_TMP/rwbad.json")" -H "$AUTH")
"$TG_BIN" rewrite -c "$conf" --route a "$TG_TMP/rwbad.json" >"$TG_TMP/rw.out" 2>"$TG_TMP/rw.err"
rc=$?
expect_eq "rewrite refuses a tool without a function, like serve (400, param tools[0].function)" \
    "400 1 tools[0].function" "$st $rc $(json_get "$TG_TMP/r" error.param)"
expect_match "rewrite names the field on stderr" 'tools\[0\]\.function' "$(cat "$TG_TMP/rw.err")"
# --responses: a /v1/responses body, as the bridge sends it (route b, mistral)
printf '%s' '{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":"hi","_m":1},{"type":"function_call","call_id":"call_abc","name":"read.file","arguments":"{}"},{"type":"function_call_output","call_id":"call_abc","output":"x"}],"tools":[{"type":"function","name":"read.file","parameters":{"type":"object","properties":{"p":{"type":"string"}}}}]}' >"$TG_TMP/rwr.json"
tg_req "$TG_TMP/r" POST /b/v1/responses -H "$AUTH" -H 'Content-Type: application/json' --data-binary @"$TG_TMP/rwr.json" >/dev/null
mock_last "$TG_TMP/last"
"$TG_BIN" rewrite -c "$conf" --route b --responses "$TG_TMP/rwr.json" >"$TG_TMP/rw.out" 2>"$TG_TMP/rw.err"
expect_eq "rewrite --responses prints exactly the chat body the bridge sends upstream" \
    "$(json_get "$TG_TMP/last" body)" "$(cat "$TG_TMP/rw.out")"
expect_eq "... which went to chat completions" "/v1/chat/completions" "$(json_get "$TG_TMP/last" path)"
# --messages: an Anthropic /v1/messages body, as its bridge sends it (route b, mistral)
printf '%s' '{"model":"m","max_tokens":64,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi","_m":1},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_abc","name":"read.file","input":{"p":"x"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_abc","content":"x"}]}],"tools":[{"name":"read.file","input_schema":{"type":"object","properties":{"p":{"type":"string"}}}}]}' >"$TG_TMP/rwm.json"
tg_req "$TG_TMP/r" POST /b/v1/messages -H "$AUTH" -H 'Content-Type: application/json' --data-binary @"$TG_TMP/rwm.json" >/dev/null
mock_last "$TG_TMP/last"
"$TG_BIN" rewrite -c "$conf" --route b --messages "$TG_TMP/rwm.json" >"$TG_TMP/rw.out" 2>"$TG_TMP/rw.err"
expect_eq "rewrite --messages prints exactly the chat body the Messages bridge sends upstream" \
    "$(json_get "$TG_TMP/last" body)" "$(cat "$TG_TMP/rw.out")"
expect_eq "... which went to chat completions" "/v1/chat/completions" "$(json_get "$TG_TMP/last" path)"

# A stream whose request is an agent's (about 190 KB of tools and history): the
# body toolgate sent upstream is freed once sent, and still logged right.
"$PY" -c '
import json
tools = [{"type": "function", "function": {"name": "tool_%d" % i, "description": "d" * 3500,
          "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}} for i in range(40)]
print(json.dumps({"model": "gpt-4o", "stream": True, "tools": tools,
                  "messages": [{"role": "user", "content": "x" * 40000}]}))' >"$TG_TMP/bigstream.json"
curl -s -N -m 10 -H 'Content-Type: application/json' -H "$AUTH" --data-binary "@$TG_TMP/bigstream.json" \
    "$TG_URL/v1/chat/completions" >"$TG_TMP/bigstream.out"
expect_match "a stream with a 190 KB request completes" 'data: \[DONE\]' "$(tail -n 2 "$TG_TMP/bigstream.out")"
mock_last "$TG_TMP/last"
sent=$(json_get "$TG_TMP/last" body | wc -c)
logged=$(grep -o '"bytes_up":[0-9]*' "$TG_LOG" | tail -n 1 | cut -d: -f2)
if [ "$sent" -gt 150000 ] && [ "${logged:-0}" -ge $((sent - 1)) ] && [ "${logged:-0}" -le $((sent + 1)) ]; then
    ok "its access-log line counts the $logged bytes sent upstream"
else
    not_ok "its access-log line counts the bytes sent upstream" "mock got $sent, log says ${logged:-nothing}"
fi

# ---- SIGHUP -------------------------------------------------------------------
code=$(chat "$TG_TMP/r" "{\"model\":\"claude-x\",$MSG}" -H "$AUTH")
expect_eq "before reload: no route for claude-x" 404 "$code"
write_conf "[route c]
models = claude-*
upstream = http://127.0.0.1:$MOCK_PORT/v1"
kill -HUP "$TG_PID"
sleep 0.5
code=$(chat "$TG_TMP/r" "{\"model\":\"claude-x\",$MSG}" -H "$AUTH")
expect_eq "after SIGHUP: the new route serves" 200 "$code"
printf '[server]\nlisten = 127.0.0.1:%s\nbogus_key = 1\n' "$port" >"$conf"
kill -HUP "$TG_PID"
sleep 0.5
code=$(chat "$TG_TMP/r" "{\"model\":\"claude-x\",$MSG}" -H "$AUTH")
expect_eq "a bad conf on SIGHUP is rejected and the old conf keeps serving" 200 "$code"
expect_match "the rejected reload is logged with FILE:LINE" "ops.conf:3: unknown key 'bogus_key'" \
    "$(cat "$TG_LOG")"
write_conf ""
kill -HUP "$TG_PID"
sleep 0.3

# ---- retries and fallback -------------------------------------------------------
mock_reset
code=$(chat "$TG_TMP/r" "{\"model\":\"gpt-4o\",$MSG}" -H "$AUTH" -H 'X-Mock: status' -H 'X-Mock-Status: 503')
expect_eq "503 after retries and fallback reaches the client" 503 "$code"
expect_eq "retries=2 then fallback: 4 upstream attempts" 4 "$(mock_count)"
mock_last "$TG_TMP/last"
expect_eq "fallback to route b (no api_key): toolgate's client key is not sent" "" \
    "$(json_get "$TG_TMP/last" headers.authorization)"
mock_reset
code=$(chat "$TG_TMP/r" "{\"model\":\"gpt-4o\",$MSG}" -H "$AUTH" -H 'X-Mock: status' -H 'X-Mock-Status: 400')
expect_eq "a 400 is not retried" "400 1" "$code $(mock_count)"

# ---- bad input: a clear 4xx naming the problem, and toolgate keeps serving ------
bad() {  # bad NAME WANT_STATUS WANT_PATTERN CURL_DATA_ARGS...
    _n=$1 _want=$2 _pat=$3
    shift 3
    _code=$(tg_req "$TG_TMP/bad" POST /v1/chat/completions -H "$AUTH" -H 'Content-Type: application/json' "$@")
    if [ "$_code" = "$_want" ] && json_get "$TG_TMP/bad" error.message >/dev/null &&
        grep -Eq -- "$_pat" "$TG_TMP/bad"; then
        ok "bad input: $_n -> $_want"
    else
        not_ok "bad input: $_n -> $_want" "got $_code: $(head -c 400 "$TG_TMP/bad")"
    fi
}
bad "malformed JSON" 400 "not valid JSON" --data-binary '{"model":"gpt-4o",'
bad "not an object" 400 "must be a JSON object" --data-binary '[1,2]'
bad "duplicate keys" 400 "duplicate" --data-binary '{"model":"gpt-4o","model":"gpt-4o",'"$MSG"'}'
bad "invalid UTF-8" 400 "not valid JSON" --data-binary "$(printf '{"model":"gpt-4o","messages":[{"role":"user","content":"\377\376"}]}')"
for f in 'messages:{}:messages' 'model:5:model' 'tools:{}:tools' 'stream:"yes":stream' \
    'temperature:"hot":temperature' 'max_tokens:[]:max_tokens' 'tool_choice:7:tool_choice' \
    'stop:3:stop' 'messages:[7]:messages\[0\]'; do
    key=${f%%:*}
    rest=${f#*:}
    val=${rest%:*}
    param=${rest##*:}
    if [ "$key" = messages ]; then
        body="{\"model\":\"gpt-4o\",\"messages\":$val}"
    elif [ "$key" = model ]; then
        body="{$MSG,\"model\":$val}"
    else
        body="{\"model\":\"gpt-4o\",$MSG,\"$key\":$val}"
    fi
    bad "wrong type for $key" 400 "\"param\":\"$param\"" --data-binary "$body"
done
deep=$("$PY" -c 'print("{\"model\":\"gpt-4o\",\"messages\":[],\"x\":" + "["*100000 + "]"*100000 + "}")')
printf '%s' "$deep" >"$TG_TMP/deep.json"
bad "100,000-deep nesting" 400 "deeper than 64" --data-binary @"$TG_TMP/deep.json"
head -c 3000000 /dev/zero | tr '\0' 'a' >"$TG_TMP/big.json"
bad "body over max_body" 413 "max_body" --data-binary @"$TG_TMP/big.json"
"$PY" -c '
import json
tools=[{"type":"function","function":{"name":"t%d"%i,"parameters":{"type":"object","properties":{}}}} for i in range(60)]
print(json.dumps({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"tools":tools}))' >"$TG_TMP/tools.json"
bad "more tools than max_tools" 400 "max_tools" --data-binary @"$TG_TMP/tools.json"
code=$(tg_req "$TG_TMP/r" GET /nowhere -H "$AUTH")
expect_eq "unknown path: 404" 404 "$code"
code=$(tg_req "$TG_TMP/r" GET /%FF -H "$AUTH")
expect_eq "unknown path that is not UTF-8: 404 (toolgate crashed on it)" 404 "$code"
code=$(chat "$TG_TMP/r" "{\"model\":\"gpt-4o\",$MSG}" -H "$AUTH")
expect_eq "still serving after all the bad input" 200 "$code"

# ---- metrics -----------------------------------------------------------------------
expect_eq "metrics: client_keys set, so /metrics asks for a key" 401 "$(tg_req "$TG_TMP/metrics" GET /metrics)"
tg_req "$TG_TMP/metrics" GET /metrics -H "$AUTH" >/dev/null
m=$(cat "$TG_TMP/metrics")
expect_match "metrics: requests by route and status" 'toolgate_requests_total\{worker="[0-9]+",route="a",status="200",stream="false"\} [0-9]+' "$m"
expect_match "metrics: latency histograms" 'toolgate_added_seconds_bucket\{le="\+Inf"\} [1-9]' "$m"
expect_match "metrics: retries counted" 'toolgate_retries_total [1-9]' "$m"
expect_match "metrics: upstream errors by class" 'toolgate_upstream_errors_total\{class="5xx"\} [1-9]' "$m"
expect_match "metrics: in flight gauge" 'toolgate_inflight [0-9]+' "$m"

stop_toolgate
expect_eq "SIGTERM: exit 0" 0 "$TG_STATUS"

# ---- no secret in any log ----------------------------------------------------------------
if [ ! -s "$TG_LOG" ]; then
    not_ok "no API key or client key in the logs" "toolgate's log $TG_LOG is missing or empty: nothing was checked"
elif grep -q -e "$SECRET_UP" -e "$SECRET_CLIENT" "$TG_LOG" "$TG_TMP/mock.err" 2>/dev/null; then
    not_ok "no API key or client key in the logs" "$(grep -n -e "$SECRET_UP" -e "$SECRET_CLIENT" "$TG_LOG" | head -3)"
else
    ok "no API key or client key in the logs"
fi
finish
