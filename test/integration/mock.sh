#!/bin/sh
# mock.sh -- the mock upstream itself, without toolgate.
#
# The other suites trust the mock to behave like a provider; this one checks
# that trust: each scenario's shape, the strict:<provider> validators (one
# request they must reject with the provider's verbatim error, one they must
# accept), and that a thousand slow streams run at once on its few threads.
. "$(dirname "$0")/lib.sh"

start_mock
URL="$MOCK_URL/v1/chat/completions"
B="$TG_TMP/body"

# first_call FILE: "name arguments" of the answer's first tool call
first_call() {
    printf '%s %s\n' "$(json_get "$1" choices.0.message.tool_calls.0.function.name)" \
        "$(json_get "$1" choices.0.message.tool_calls.0.function.arguments)"
}

# mreq OUT BODY [CURL ARGS]: POST to the mock; prints the status.
mreq() {
    _o=$1
    _b=$2
    shift 2
    curl -s -m 20 -o "$_o" -D "$_o.h" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$_b" "$@" "$URL"
}

# ---- scenarios ----------------------------------------------------------------

expect_eq "default: status 200" 200 "$(mreq "$B" '{"model":"m1","messages":[]}')"
expect_eq "default: content" "hello from mock" "$(json_get "$B" choices.0.message.content)"
expect_eq "default: model echoed" "m1" "$(json_get "$B" model)"

mreq "$B" '{"model":"m1","stream":true}' -H 'X-Mock-Chunks: 2' >/dev/null
expect_eq "default stream: role, 2 tokens, finish, [DONE]" 5 "$(grep -c '^data: ' "$B")"
expect_eq "default stream: last event is [DONE]" "data: [DONE]" "$(grep '^data: ' "$B" | tail -n 1)"

tools='"tools":[{"type":"function","function":{"name":"first_tool"}},{"type":"function","function":{"name":"second"}}]'
mreq "$B" "{\"model\":\"mock-tools\",$tools}" >/dev/null
expect_eq "tools (from model): first declared tool called" "first_tool call_mock1 {}" \
    "$(json_get "$B" choices.0.message.tool_calls.0.function.name) $(json_get "$B" choices.0.message.tool_calls.0.id) $(json_get "$B" choices.0.message.tool_calls.0.function.arguments)"
mreq "$B" "{\"model\":\"x\",\"stream\":true,$tools}" -H 'X-Mock: tools' >/dev/null
check "tools stream: args in 2 fragments, finish tool_calls" "$PY" -c '
import json, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {")]
frags = [tc["function"]["arguments"] for e in ev for tc in e["choices"][0]["delta"].get("tool_calls", [])]
assert frags == ["", "{", "}"], frags
assert ev[0]["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_mock1"
assert ev[-1]["choices"][0]["finish_reason"] == "tool_calls"' "$B"

expect_eq "status: X-Mock-Status honoured" 503 "$(mreq "$B" '{}' -H 'X-Mock: status' -H 'X-Mock-Status: 503')"
expect_eq "status: Retry-After 0 on 503" 0 "$(header_value "$B.h" Retry-After)"
expect_eq "status: default 500" 500 "$(mreq "$B" '{}' -H 'X-Mock: status')"

expect_eq "stall: no answer within 1 s" 000 "$(curl -s -o /dev/null -m 1 -w '%{http_code}' --data-binary '{}' -H 'X-Mock: stall' "$URL")"
t0=$(now_ms)
st=$(mreq "$B" '{}' -H 'X-Mock: stall' -H 'X-Mock-Delay-Ms: 300')
dt=$(($(now_ms) - t0))
if [ "$st" = 200 ] && [ "$dt" -ge 280 ]; then ok "stall + delay: default answer after the delay (${dt} ms)"; else not_ok "stall + delay" "status $st after $dt ms"; fi

curl -sN -m 5 --data-binary '{"stream":true}' -H 'X-Mock: reset' "$URL" >"$B" 2>/dev/null
rc=$?
expect_eq "reset: 2 chunks then a cut connection" "2 18" "$(grep -c '^data: ' "$B") $rc"
expect_eq "garbage: broken JSON body" '{"choices": [ this is not json' "$(mreq "$B" '{}' -H 'X-Mock: garbage' >/dev/null; cat "$B")"
mreq "$B" '{}' -H 'X-Mock: big' >/dev/null
check "big: 10 MB of content" "$PY" -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["choices"][0]["message"]["content"]) == 10485760' "$B"

printf 'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n' >"$TG_TMP/f.sse"
stream_times "$TG_TMP/times" "$URL" '{}' -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/f.sse" -H 'X-Mock-Delay-Ms: 300'
expect_eq "fixture .sse: sent verbatim" 'data: {"a":1} data: {"b":2} data: [DONE]' "$(cut -d' ' -f2- "$TG_TMP/times" | tr '\n' ' ' | sed 's/ $//')"
last=$(tail -n 1 "$TG_TMP/times" | cut -d' ' -f1)
if [ "${last:-0}" -ge 550 ]; then ok "fixture .sse: delay between events (${last} ms)"; else not_ok "fixture .sse: delay between events" "last event at ${last} ms"; fi
printf '{"fixture":true}' >"$TG_TMP/f.json"
mreq "$B" '{}' -H 'X-Mock: fixture' -H "X-Mock-Fixture: $TG_TMP/f.json" >/dev/null
expect_eq "fixture .json: sent verbatim" '{"fixture":true}' "$(cat "$B")"

expect_eq "GET /v1/models" "mock-model" "$(curl -s "$MOCK_URL/v1/models" >"$B"; json_get "$B" data.0.id)"
mock_reset
mreq "$B" '{"model":"seen"}' -H 'X-Foo: Bar' >/dev/null
mock_last "$B"
expect_eq "/_last: path, lowercased headers, raw body" '/v1/chat/completions Bar {"model":"seen"}' \
    "$(json_get "$B" path) $(json_get "$B" headers.x-foo) $(json_get "$B" body)"
expect_eq "/_count after /_reset" 1 "$(mock_count)"

# ---- strict:<provider> --------------------------------------------------------

# strict NAME PROVIDER BODY WANT_STATUS WANT_PATTERN
strict() {
    st=$(mreq "$B" "$3" -H "X-Mock: strict:$2")
    if [ "$st" = "$4" ] && grep -Eq -- "$5" "$B"; then ok "strict:$2 $1"; else not_ok "strict:$2 $1" "status $st (want $4), body: $(head -c 600 "$B")"; fi
}
U='{"role":"user","content":"hi"}'
call() { printf '{"role":"assistant","content":null,"tool_calls":[{"id":"%s","type":"function","function":{"name":"f","arguments":"{}"}}]}' "$1"; }
res() { printf '{"role":"tool","tool_call_id":"%s","content":"ok"}' "$1"; }

strict "accepts a clean conversation" mistral "{\"model\":\"m\",\"messages\":[$U,{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"abcDEF123\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},$(res abcDEF123)]}" 200 'hello from mock'
strict "422 extra_forbidden with loc" mistral "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"name\":\"bob\"}]}" 422 '"loc":\["body","messages",0,"user","name"\]'
strict "422 on null content (no null keys)" mistral "{\"model\":\"m\",\"messages\":[$U,$(call abcDEF123),$(res abcDEF123)]}" 422 'extra_forbidden'
strict "400 code 3280 for a non 9-char id" mistral "{\"model\":\"m\",\"messages\":[$U,{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"call_0fypS1hVX\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},$(res call_0fypS1hVX)]}" 400 'Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9.*"code":"3280"'
strict "400 code 3230 for user after tool" mistral "{\"model\":\"m\",\"messages\":[$U,{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"abcDEF123\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},$(res abcDEF123),$U]}" 400 "Unexpected role 'user' after role 'tool'.*\"code\":\"3230\""
strict "accepts a clean conversation" groq "{\"model\":\"m\",\"messages\":[$U,$(call call_1),$(res call_1)]}" 200 'hello from mock'
strict "400 property unsupported" groq "{\"model\":\"m\",\"messages\":[$U,{\"role\":\"assistant\",\"content\":\"x\",\"reasoning_content\":\"r\"}]}" 400 "'messages.1' : for 'role:assistant' the following must be satisfied\[\('messages.1' : property 'reasoning_content' is unsupported\)\]"
strict "400 on a top-level store" groq '{"model":"m","store":true,"messages":[]}' 400 "property 'store' is unsupported, did you mean 'stop'\?"
strict "400 on a _key in a content part" groq "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\",\"_x\":1}]}]}" 400 "property '_x' is unsupported"
strict "accepts a clean conversation" fireworks "{\"model\":\"m\",\"messages\":[$U,$(call call_1),$(res call_1)]}" 200 'hello from mock'
strict "400 extra input with its path" fireworks "{\"model\":\"m\",\"messages\":[$U,$(call call_1),$(res call_1),{\"role\":\"tool\",\"tool_call_id\":\"x\",\"content\":\"r\",\"tool_name\":\"f\"}]}" 400 "Extra inputs are not permitted, field: 'messages\[3\]\.tool_name'"
strict "accepts a clean conversation" cerebras "{\"model\":\"m\",\"messages\":[$U,$(call call_1),$(res call_1)]}" 200 'hello from mock'
strict "400 wrong_api_format" cerebras "{\"model\":\"m\",\"messages\":[$U,$U,{\"role\":\"assistant\",\"content\":\"x\",\"reasoning_content\":\"r\"}]}" 400 "messages.2.assistant.reasoning_content: property 'messages.2.assistant.reasoning_content' is unsupported.*wrong_api_format"
strict "accepts a Gemini-safe schema" gemini '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string","enum":["a"]}},"required":["x"]}}}]}' 200 'hello from mock'
strict "array-wrapped 400 for an unknown top-level key" gemini '{"model":"m","reasoning":{},"messages":[]}' 400 '^\[\{"error":\{"code":400,"message":"Invalid JSON payload received. Unknown name \\"reasoning\\": Cannot find field."'
strict "400 for additionalProperties" gemini '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}}}]}' 400 "Unknown name \\\\\"additionalProperties\\\\\" at 'tools\[0\].function_declarations\[0\].parameters'"
strict "400 for a type array" gemini '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":["string","null"]}}}}}]}' 400 'Proto field is not repeating, cannot start list'
strict "400 for an array without items" gemini '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"array"}}}}}]}' 400 'parameters.properties\[x\].items: missing field'
strict "400 for a non-string enum" gemini '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"integer","enum":[1]}}}}}]}' 400 'TYPE_STRING'
strict "accepts valid tools" openai '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"ok_name-1","parameters":{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}}}}}]}' 200 'hello from mock'
strict "400 for a tool name with a dot" openai '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"a.b"}}]}' 400 "Invalid 'tools\[0\].function.name': string does not match pattern"
strict "400 for an array without items" openai '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"l":{"type":"array"}}}}}]}' 400 "In context=\('properties', 'l'\), array schema missing items"
strict "400 for an image part in a tool message" openai "{\"model\":\"m\",\"messages\":[$U,$(call call_1),{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AA==\"}}]}]}" 400 "Image URLs are only allowed for messages with role 'user', but this message with role 'tool'.*messages\.\[2\]\.content\.\[1\]\.type"
strict "400 for top-level anyOf" anthropic '{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","anyOf":[]}}}]}' 400 'input_schema does not support oneOf, allOf, or anyOf at the top level'
st=$(mreq "$B" "{\"model\":\"m\",\"messages\":[$U],$tools}" -H 'X-Mock: strict:mistral' -H 'X-Mock-Then: tools')
expect_eq "strict + X-Mock-Then: tools answers with a tool call" "200 first_tool" "$st $(json_get "$B" choices.0.message.tool_calls.0.function.name)"

# ---- MOCK_CALL: the directive real agents drive the mock with ------------------

RT='{"type":"function","function":{"name":"Read","parameters":{"type":"object","properties":{"file_path":{"type":"string"}}}}}'
DU='{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"\"read it MOCK_CALL Read file_path=/tmp/a.txt cmd='"'"'cat a b'"'"'\""}]}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$DU],\"tools\":[$RT]}" >/dev/null
expect_eq "directive: calls the named tool with key=value arguments (quoted values, a closing quote dropped)" \
    'Read {"file_path":"/tmp/a.txt","cmd":"cat a b"}' \
    "$(first_call "$B")"
DC='{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{}"}}]}'
DR='{"role":"tool","tool_call_id":"c1","content":"line1\nsecret-42"}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$DU,$DC,$DR,{\"role\":\"user\",\"content\":\"<system-reminder>y</system-reminder>\"}],\"tools\":[$RT]}" >/dev/null
expect_eq "directive: once the call is answered, a text quoting the result (a user turn after it too)" \
    'MOCK_RESULT: line1 secret-42' "$(json_get "$B" choices.0.message.content)"
mreq "$B" "{\"model\":\"m\",\"stream\":true,\"messages\":[$DU],\"tools\":[$RT]}" >/dev/null
check "directive streamed: the call's arguments in fragments, finish tool_calls" "$PY" -c '
import json, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {")]
calls = [c for e in ev for c in e["choices"][0]["delta"].get("tool_calls") or []]
args = "".join(c["function"].get("arguments", "") for c in calls)
assert calls[0]["function"]["name"] == "Read" and json.loads(args) == {"file_path": "/tmp/a.txt", "cmd": "cat a b"}, calls
assert ev[-1]["choices"][0]["finish_reason"] == "tool_calls"' "$B"
mreq "$B" "{\"model\":\"m\",\"messages\":[$DU]}" >/dev/null
expect_eq "directive: a side request without the tool gets a short text" 'mock: no such tool offered here' \
    "$(json_get "$B" choices.0.message.content)"
mreq "$B" "{\"model\":\"gemini-3-pro\",\"messages\":[$DU],\"tools\":[$RT]}" >/dev/null
expect_eq "directive: a Gemini 3 model signs its call" 'mock-signature-call_dir1' \
    "$(json_get "$B" choices.0.message.tool_calls.0.extra_content.google.thought_signature)"
MT='{"type":"function","function":{"name":"search_tools","parameters":{}}},{"type":"function","function":{"name":"call_tool","parameters":{}}}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$DU],\"tools\":[$MT]}" >/dev/null
expect_eq "directive, discovery: a hidden tool is searched for first" 'search_tools {"query":"Read"}' \
    "$(first_call "$B")"
SC='{"role":"assistant","content":null,"tool_calls":[{"id":"s1","type":"function","function":{"name":"search_tools","arguments":"{}"}}]}'
SR='{"role":"tool","tool_call_id":"s1","content":"{}"}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$DU,$SC,$SR],\"tools\":[$MT]}" >/dev/null
expect_eq "directive, discovery: then called through call_tool" 'call_tool {"name":"Read","arguments":{"file_path":"/tmp/a.txt","cmd":"cat a b"}}' \
    "$(first_call "$B")"
# discovery for agents (agent_catalog.sh): Claude Code's user turn opens
# with a system reminder and a system turn follows it; the search takes
# the user's words alone
FU='{"role":"user","content":"<system-reminder>\ngit commit attribution\n</system-reminder>\n\nmake a pie chart"}'
FS='{"role":"system","content":"# Environment\nThe following deferred tools are now available via ToolSearch:\nBash"}'
URL="$MOCK_URL/as/discovery-fill/v1/chat/completions"
mreq "$B" "{\"model\":\"m\",\"messages\":[$FU,$FS],\"tools\":[$MT]}" >/dev/null
expect_eq "discovery-fill: searches with the last user turn, without its system reminder" \
    'search_tools {"query":"make a pie chart"}' \
    "$(first_call "$B")"
# a search result whose first hit carries its parameters (toolgate's
# discovery_schemas): call_tool at once; without them: get_tool_schema
MS='{"type":"function","function":{"name":"get_tool_schema","parameters":{}}}'
SC='{"role":"assistant","content":null,"tool_calls":[{"id":"s1","type":"function","function":{"name":"search_tools","arguments":"{}"}}]}'
SR='{"role":"tool","tool_call_id":"s1","content":"{\"results\":[{\"name\":\"pie\",\"parameters\":{\"type\":\"object\",\"properties\":{\"data\":{\"type\":\"array\"}},\"required\":[\"data\"]}}]}"}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$FU,$SC,$SR],\"tools\":[$MT,$MS]}" >/dev/null
expect_eq "discovery-fill: a first hit that carries its parameters is called at once" \
    'call_tool {"name":"pie","arguments":{"data":[]}}' "$(first_call "$B")"
SR='{"role":"tool","tool_call_id":"s1","content":"{\"results\":[{\"name\":\"pie\"}]}"}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$FU,$SC,$SR],\"tools\":[$MT,$MS]}" >/dev/null
expect_eq "discovery-fill: one without them is read first" \
    'get_tool_schema {"names":["pie"]}' "$(first_call "$B")"
URL="$MOCK_URL/as/discovery-toolsearch/v1/chat/completions"
TT='{"type":"function","function":{"name":"ToolSearch","parameters":{}}},{"type":"function","function":{"name":"call_tool","parameters":{}}}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$FU,$FS],\"tools\":[$TT]}" >/dev/null
expect_eq "discovery-toolsearch: the user turn calls ToolSearch" \
    'ToolSearch {"query":"make a pie chart","max_results":5}' \
    "$(first_call "$B")"
TC='{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"ToolSearch","arguments":"{}"}}]}'
TR='{"role":"tool","tool_call_id":"t1","content":"Tools loaded, now callable: mcp__c__pie, mcp__c__bar\n<functions>\n<function>{\"name\":\"mcp__c__bar\"}</function><function>{\"name\":\"mcp__c__pie\",\"parameters\":{\"type\":\"object\",\"properties\":{\"data\":{\"type\":\"array\"}},\"required\":[\"data\"]}}</function>\n</functions>"}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$FU,$FS,$TC,$TR],\"tools\":[$TT]}" >/dev/null
expect_eq "discovery-toolsearch: then the first loaded tool through call_tool, its required parameters filled" \
    'call_tool {"name":"mcp__c__pie","arguments":{"data":[]}}' \
    "$(first_call "$B")"
URL="$MOCK_URL/v1/chat/completions"
CU='{"role":"user","content":"MOCK_CALL Read file_path=/tmp/a.txt MOCK_CUT_STREAMS"}'
mreq "$B" "{\"model\":\"m\",\"stream\":true,\"messages\":[$CU],\"tools\":[$RT]}" >/dev/null
expect_eq "directive, MOCK_CUT_STREAMS: a stream ends without a finish or [DONE]" '1 0 0' \
    "$(grep -c '^data: {' "$B") $(grep -c 'finish_reason":"' "$B") $(grep -c DONE "$B")"
mreq "$B" "{\"model\":\"m\",\"messages\":[$CU],\"tools\":[$RT]}" >/dev/null
expect_eq "directive, MOCK_CUT_STREAMS: a whole answer is not cut" 'Read' "$(json_get "$B" choices.0.message.tool_calls.0.function.name)"
# flows of several steps (test/integration/agents.sh)
TS='{"type":"function","function":{"name":"ToolSearch","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}}'
MU='{"role":"user","content":"MOCK_CALL mcp__c__note path=/n bg=false prompt='"'"'a\\nb MOCK_NEXT Read file_path=/x'"'"'"}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$MU],\"tools\":[$TS]}" >/dev/null
expect_eq "directive, a tool not offered: loaded first with ToolSearch select:" 'ToolSearch {"query":"select:mcp__c__note"}' \
    "$(first_call "$B")"
NT='{"type":"function","function":{"name":"mcp__c__note","parameters":{"type":"object"}}}'
TC='{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"ToolSearch","arguments":"{}"}}]}'
TR='{"role":"tool","tool_call_id":"t1","content":"loaded"}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$MU,$TC,$TR],\"tools\":[$TS,$NT]}" >/dev/null
expect_eq "directive: after ToolSearch the loaded tool; a bare false, \\n and MOCK_NEXT in values" \
    'mcp__c__note {"path":"/n","bg":false,"prompt":"a\nb MOCK_CALL Read file_path=/x"}' \
    "$(first_call "$B")"
IU='{"role":"user","content":[{"type":"text","text":"the image"},{"type":"image_url","image_url":{"url":"data:image/png;base64,'"$(printf 'xx tok-img-1 yy' | base64)"'"}}]}'
mreq "$B" "{\"model\":\"m\",\"messages\":[$DU,$DC,$DR,$IU],\"tools\":[$RT]}" >/dev/null
expect_eq "directive: the result quotes the tokens in later messages' base64 data (MOCK_SEEN)" \
    'MOCK_RESULT: line1 secret-42 MOCK_SEEN: tok-img-1' "$(json_get "$B" choices.0.message.content)"
mreq "$B" '{"model":"m","messages":[{"role":"user","content":"hi"}]}' >/dev/null
expect_eq "no directive: the default answer" 'hello from mock' "$(json_get "$B" choices.0.message.content)"
st=$(curl -s -o "$B" -w '%{http_code}' --data-binary '{"model":"m","messages":[],"reasoning":{}}' "$MOCK_URL/as/strict:gemini/any/v1/chat/completions")
expect_eq "/as/<scenario>/ in the path picks the scenario (a route's upstream URL)" "400 Unknown name" \
    "$st $(grep -o 'Unknown name' "$B" | head -n 1)"

# ---- many slow streams at once ------------------------------------------------

N=${MOCK_STREAMS:-1000}
res=$("$PY" - "$MOCK_PORT" "$N" <<'EOF'
import asyncio, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
body = b'{"model":"mock-slow","stream":true}'
req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: mock\r\nContent-Type: application/json\r\n"
       b"X-Mock-Chunks: 4\r\nX-Mock-Delay-Ms: 250\r\nConnection: close\r\n"
       b"Content-Length: %d\r\n\r\n" % len(body)) + body
async def one():
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(req)
    await w.drain()
    data = await r.read()
    w.close()
    return data.count(b"data: ")
async def main():
    t = time.monotonic()
    got = await asyncio.gather(*[one() for _ in range(n)], return_exceptions=True)
    good = sum(1 for g in got if g == 7)
    print(good, round(time.monotonic() - t, 1))
asyncio.run(main())
EOF
)
good=${res% *}
secs=${res#* }
# Each stream takes 1.5 s of delays; 1000 at once must overlap, not queue.
if [ "$good" = "$N" ] && [ "${secs%.*}" -lt 10 ]; then
    ok "$N concurrent slow streams all complete (${secs} s)"
else
    not_ok "$N concurrent slow streams all complete" "complete: $good of $N in ${secs} s"
fi

# X-Mock-Stamp (bench/run.sh's per-chunk latency): every content chunk carries
# the mock's send time, and bench/streamer reads one latency per chunk.
mreq "$B" '{"model":"m1","stream":true}' -H 'X-Mock-Chunks: 3' -H 'X-Mock-Stamp: 1' >/dev/null
check "stamp: each content chunk carries @t + 16 digits, rising" "$PY" -c '
import json, re, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {")]
st = [int(m.group(1)) for e in ev for m in [re.search(r"@t(\d{16}) $", e["choices"][0]["delta"].get("content") or "")] if m]
assert len(st) == 3 and st == sorted(st) and st[0] > 0, st' "$B"
mreq "$B" '{"model":"m1","stream":true}' -H 'X-Mock-Chunks: 3' >/dev/null
expect_eq "stamp: none without the header" 0 "$(grep -c '@t' "$B")"
if cc -O2 -o "$TG_TMP/streamer" "$TG_ROOT/bench/streamer.c" 2>"$TG_TMP/streamer.err"; then
    printf '{"model":"m1","stream":true}' >"$TG_TMP/sbody"
    line=$("$TG_TMP/streamer" -p "$MOCK_PORT" -b "$TG_TMP/sbody" -H 'X-Mock-Chunks: 4' -H 'X-Mock-Delay-Ms: 2' \
        -H 'X-Mock-Stamp: 1' -c 3 -n 6 -t 20)
    n=$(echo "$line" | sed -n 's/.* lat_n=\([0-9]*\).*/\1/p')
    p50=$(echo "$line" | sed -n 's/.* lat_p50=\([0-9]*\).*/\1/p')
    if [ "$n" = 24 ] && [ -n "$p50" ] && [ "$p50" -gt 0 ] && [ "$p50" -lt 1000000 ]; then
        ok "streamer: one latency per stamped chunk (24), p50 ${p50} us"
    else
        not_ok "streamer: one latency per stamped chunk" "$line"
    fi
else
    not_ok "streamer builds" "$(cat "$TG_TMP/streamer.err")"
fi

finish
