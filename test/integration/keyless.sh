#!/bin/sh
# keyless.sh -- `make run` without provider keys: a route whose api_key is
# ${VAR} with VAR unset or empty is named at start (one warn line per
# route: the route, the variable, that its requests fail until it is set),
# and a request to it that carries no key of its own is answered 401 in the
# API's shape naming the variable, without a call upstream -- instead of
# the provider's bare 401 or a 502 "Could not resolve host". A client's own
# key still goes through; `toolgate check` says the same and names a host
# that does not resolve; a port already taken is said, not a crash.
. "$(dirname "$0")/lib.sh"

start_mock
port=$(free_port)
conf="$TG_TMP/keyless.conf"
{
    conf_server "$port"
    conf_route nokey 'nokey-*' 'api_key = ${TG_KEYLESS_UNSET}'
    conf_route emptykey 'empty-*' 'api_key = ${TG_KEYLESS_EMPTY}'
    conf_route haskey 'has-*' 'api_key = ${TG_KEYLESS_SET}'
    conf_route defkey 'def-*' 'api_key = ${TG_KEYLESS_UNSET:-fallback-key}'
    conf_route clientkey 'client-*' ''
    conf_route optkey 'opt-*' 'api_key = ${TG_KEYLESS_UNSET:-}'
} >"$conf"
unset TG_KEYLESS_UNSET
export TG_KEYLESS_EMPTY= TG_KEYLESS_SET=sk-set
start_toolgate "$conf" || exit 1

log=$(cat "$TG_LOG")
expect_match "start: warn names route nokey and its variable" \
    'warn: route nokey: api_key is \$\{TG_KEYLESS_UNSET\}, which is unset or empty: requests to this route fail until TG_KEYLESS_UNSET is set' "$log"
expect_match "start: warn for an empty variable too" 'warn: route emptykey: api_key is \$\{TG_KEYLESS_EMPTY\}' "$log"
expect_eq "start: one warn line per keyless route, none for set, defaulted, optional or absent keys" 2 \
    "$(grep -c 'warn: route .*: api_key is' "$TG_LOG")"

B="$TG_TMP/b"
mock_reset
expect_eq "chat to a keyless route: 401" 401 \
    "$(chat "$B" '{"model":"nokey-1","messages":[{"role":"user","content":"hi"}]}')"
expect_eq "chat: OpenAI error shape, code missing_api_key" missing_api_key "$(json_get "$B" error.code)"
expect_match "chat: the message names the variable to set" \
    "route 'nokey' has no provider key: its api_key is \\$\\{TG_KEYLESS_UNSET\\}.*set TG_KEYLESS_UNSET" \
    "$(json_get "$B" error.message)"
expect_eq "chat: nothing went upstream" 0 "$(mock_count)"
expect_eq "messages API to a keyless route: 401" 401 \
    "$(tg_req "$B" POST /v1/messages -H 'Content-Type: application/json' -H 'anthropic-version: 2023-06-01' \
        --data-binary '{"model":"nokey-1","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}')"
expect_eq "messages: Anthropic's error shape" "error authentication_error" \
    "$(json_get "$B" type) $(json_get "$B" error.type)"
expect_eq "a client's own key goes through the keyless route" 200 \
    "$(chat "$B" '{"model":"nokey-1","messages":[{"role":"user","content":"hi"}]}' -H 'Authorization: Bearer sk-own')"
expect_eq "x-upstream-authorization too" 200 \
    "$(chat "$B" '{"model":"empty-1","messages":[{"role":"user","content":"hi"}]}' -H 'x-upstream-authorization: Bearer sk-own')"
expect_eq "a route with its key set answers" 200 \
    "$(chat "$B" '{"model":"has-1","messages":[{"role":"user","content":"hi"}]}')"
expect_eq "a defaulted key answers" 200 \
    "$(chat "$B" '{"model":"def-1","messages":[{"role":"user","content":"hi"}]}')"
expect_eq "a route without api_key forwards as before" 200 \
    "$(chat "$B" '{"model":"client-1","messages":[{"role":"user","content":"hi"}]}')"
expect_eq "an optional key (\${VAR:-}) unset: the request goes up without one" 200 \
    "$(chat "$B" '{"model":"opt-1","messages":[{"role":"user","content":"hi"}]}')"
# A second toolgate on the same port (make run beside a running one):
# a clear message and exit 1, not a crash.
"$TG_BIN" serve -c "$conf" >"$TG_TMP/second.log" 2>&1
expect_eq "a taken port: exit 1" 1 "$?"
expect_match "a taken port: said" "listen 127.0.0.1:$port: Address already in use" "$(cat "$TG_TMP/second.log")"
sanitizer_clean "a taken port" "$TG_TMP/second.log"
stop_toolgate

# toolgate check: the same warning, and a host that does not resolve
# (.invalid never does, RFC 6761); loopback routes draw no host warning.
printf '[route far]\nmodels = far-*\nupstream = https://no-such-provider.invalid/v1\napi_key = ${TG_KEYLESS_UNSET}\n' >>"$conf"
"$TG_BIN" check -c "$conf" >"$TG_TMP/check.txt" 2>&1
expect_eq "check: exits 0 (warnings do not fail it)" 0 "$?"
out=$(cat "$TG_TMP/check.txt")
expect_match "check: warns of the unset variable" 'warn: route nokey: api_key is \$\{TG_KEYLESS_UNSET\}' "$out"
expect_match "check: names the host that does not resolve" \
    'warn: route far: upstream host no-such-provider.invalid does not resolve' "$out"
expect_eq "check: no host warning for loopback routes" 1 "$(grep -c 'does not resolve' "$TG_TMP/check.txt")"
finish
