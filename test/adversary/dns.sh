#!/bin/sh
# dns.sh -- an upstream named by a host whose lookup hangs (issue 28: no
# blocking call on a worker). One worker, so the waiting request and a
# bystander share it. test/adversary/slow_dns.c (preloaded) makes the
# lookup of up.slow.test hang until a gate file exists. libcurl looks names
# up in its threaded resolver; when the round's connect_timeout ends first,
# libcurl 7.88 waits for that resolver thread to finish before it lets the
# transfer go, unless CURLOPT_QUICK_EXIT is set: the worker froze until DNS
# answered. Checked, in order (not times): the round that needs the name is
# answered (504) while the lookup still hangs, then a bystander is answered
# while it still hangs. A gate opened after 20 s keeps a failing run from
# hanging the suite.
. "$(dirname "$0")/../integration/lib.sh"

start_mock
if ! cc -shared -fPIC -o "$TG_TMP/slow_dns.so" "$TG_ROOT/test/adversary/slow_dns.c" -ldl \
    2>"$TG_TMP/slow_dns.err"; then
    not_ok "the lookup shim builds" "$(cat "$TG_TMP/slow_dns.err")"
    finish
fi
PORT=$(free_port)
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = warn\n\n' "$PORT"
    printf '[route slow]\nmodels = slow-*\nupstream = http://up.slow.test:%s/v1\ndialect = openai\nconnect_timeout = 1s\n\n' "$MOCK_PORT"
    conf_route main '*'
} >"$TG_TMP/dns.conf"
GATE="$TG_TMP/dns.open"
export TG_SLOW_DNS_HOST=up.slow.test TG_SLOW_DNS_GATE="$GATE" TG_SLOW_DNS_MARK="$TG_TMP/dns.asked"
_asan=$ASAN_OPTIONS
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
export LD_PRELOAD="$TG_TMP/slow_dns.so"
start_toolgate "$TG_TMP/dns.conf" || finish
unset LD_PRELOAD
export ASAN_OPTIONS="$_asan"
(sleep 20; touch "$GATE") &
GATE_PID=$!

code=$(chat "$TG_TMP/a" '{"model":"slow-1","messages":[{"role":"user","content":"hi"}]}')
state=$([ -e "$GATE" ] && echo "lookup ended" || echo "lookup still hangs")
expect_eq "the upstream's name was looked up" 1 "$([ -s "$TG_TMP/dns.asked" ] && echo 1)"
expect_eq "the round whose lookup hangs ends at connect_timeout, while the lookup still hangs" \
    "504 lookup still hangs" "$code $state"
code=$(chat "$TG_TMP/b" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
state=$([ -e "$GATE" ] && echo "lookup ended" || echo "lookup still hangs")
expect_eq "a bystander on the same worker is answered while the lookup still hangs" \
    "200 lookup still hangs" "$code $state"
touch "$GATE"
kill $GATE_PID 2>/dev/null
code=$(chat "$TG_TMP/c" '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}')
expect_eq "the worker serves on after the lookup ended" 200 "$code"
unset TG_SLOW_DNS_HOST TG_SLOW_DNS_GATE TG_SLOW_DNS_MARK
stop_toolgate
finish
