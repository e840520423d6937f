#!/bin/sh
# request_coding.sh -- request bodies sent compressed (core/decode.c): Codex
# sends large /v1/responses bodies with Content-Encoding: zstd, and the APIs
# take them; toolgate decodes zstd, gzip and deflate on every API's path and
# sends the plain body upstream (no Content-Encoding). An unknown coding is
# a 415, bytes that are not their coding a 400, a body past max_body once
# decoded a 413 -- each in the API's own error shape.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
command -v zstd >/dev/null || { not_ok "zstd is installed (.ci/deps.sh)" "no zstd"; finish; }
start_mock
PORT=$(free_port)
CONF="$TG_TMP/coding.conf"
{
    conf_server "$PORT" 'max_body = 1M'
    conf_route openai '*'
} >"$CONF"
start_toolgate "$CONF" || finish

CHAT='{"model":"gpt-4o","messages":[{"role":"user","content":"hi there"}]}'
printf '%s' "$CHAT" | gzip -c >"$TG_TMP/chat.gz"
printf '%s' "$CHAT" | zstd -q -c >"$TG_TMP/chat.zst"
printf '%s' '{"model":"gpt-4o","input":"hi there"}' | zstd -q -c >"$TG_TMP/resp.zst"
printf '%s' '{"model":"gpt-4o","max_tokens":50,"messages":[{"role":"user","content":"hi there"}]}' |
    gzip -c >"$TG_TMP/msg.gz"

# send OUT PATH CODING FILE: POST the file's bytes as they are
send() {
    tg_req "$1" POST "$2" -H 'Content-Type: application/json' -H "Content-Encoding: $3" \
        -H 'anthropic-version: 2023-06-01' --data-binary "@$4"
}

for c in gzip zstd; do
    f=$TG_TMP/chat.gz
    [ $c = zstd ] && f=$TG_TMP/chat.zst
    code=$(send "$TG_TMP/c.out" /v1/chat/completions $c "$f")
    mock_last "$TG_TMP/last.json"
    expect_eq "chat, $c body: answered, the plain body upstream without Content-Encoding" \
        "200 chat.completion hi there none" \
        "$code $(json_get "$TG_TMP/c.out" object) $(json_get "$TG_TMP/last.json" body.messages.0.content) $(json_get "$TG_TMP/last.json" headers.content-encoding || echo none)"
done
code=$(send "$TG_TMP/r.out" /v1/responses zstd "$TG_TMP/resp.zst")
expect_eq "Responses, zstd body (Codex): answered" "200 response" "$code $(json_get "$TG_TMP/r.out" object)"
code=$(send "$TG_TMP/m.out" /v1/messages gzip "$TG_TMP/msg.gz")
expect_eq "Messages, gzip body: answered" "200 message" "$code $(json_get "$TG_TMP/m.out" type)"

code=$(send "$TG_TMP/u.out" /v1/chat/completions br "$TG_TMP/chat.gz")
expect_eq "an unknown coding: 415 naming it" "415 unsupported_content_encoding" \
    "$code $(json_get "$TG_TMP/u.out" error.code)"
code=$(send "$TG_TMP/x.out" /v1/chat/completions zstd "$TG_TMP/chat.gz")
expect_eq "bytes that are not their coding: 400" "400 invalid_content_encoding" \
    "$code $(json_get "$TG_TMP/x.out" error.code)"
code=$(send "$TG_TMP/xm.out" /v1/messages zstd "$TG_TMP/msg.gz")
expect_eq "the same on /v1/messages: Anthropic's error shape" "400 error invalid_request_error" \
    "$code $(json_get "$TG_TMP/xm.out" type) $(json_get "$TG_TMP/xm.out" error.type)"
head -c 67108864 /dev/zero | zstd -q -c >"$TG_TMP/bomb.zst"
code=$(send "$TG_TMP/b.out" /v1/chat/completions zstd "$TG_TMP/bomb.zst")
expect_eq "64 MB of zeros in $(wc -c <"$TG_TMP/bomb.zst") bytes, max_body 1M: 413" "413 request_too_large" \
    "$code $(json_get "$TG_TMP/b.out" error.code)"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$TG_URL/healthz")
expect_eq "still serving" 200 "$code"
stop_toolgate
finish
