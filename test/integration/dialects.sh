#!/bin/sh
# dialects.sh -- the product's promise end to end: a messy agent request,
# sent through toolgate to a mock that validates like each strict provider
# (X-Mock: strict:<provider>), is accepted, and the tool call that comes
# back carries the agent's own tool name.
#
# The request has what real agents send and strict providers reject
# (docs/dialects.md sections 4 and 9): a dotted tool name,
# JSON-Schema keywords Gemini refuses, bookkeeping keys (reasoning_content,
# extra_content, index, "_"-private keys, name on a tool message), OpenAI
# "call_..." ids, a user turn right after a tool turn, top-level store.
# When a provider still refuses, the test prints its verbatim error.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock
PORT=$(free_port)
CONF="$TG_TMP/dialects.conf"
PROVIDERS="openai gemini vertex anthropic mistral groq fireworks cerebras"
{
    conf_server "$PORT"
    for p in $PROVIDERS; do
        printf '[route %s]\nmodels = %s-*\nprefix = /%s\nupstream = http://127.0.0.1:%s/%s/v1\ndialect = %s\n\n' \
            "$p" "$p" "$p" "$MOCK_PORT" "$p" "$p"
    done
} >"$CONF"
start_toolgate "$CONF" || finish

REQ="$TG_TMP/messy.json"
"$PY" - >"$REQ" <<'EOF'
import json
schema = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "path": {"type": "string", "description": "file to read"},
        "encoding": {"type": ["string", "null"]},
        "lines": {"type": "array"},
        "mode": {"type": "integer", "enum": [1, 2]},
        "kind": {"const": "text"},
        # rule 58: an empty properties below the root; rule 59: properties
        # on a string (browser-use#7, opencode#11889)
        "options": {"type": "object", "properties": {}},
        "pattern": {"type": "string", "properties": {"re": {"type": "string"}}},
        # rule 60: Vertex takes nothing beside an anyOf (litellm#11164)
        "base": {"anyOf": [{"type": "string"}, {"type": "integer"}],
                 "description": "base branch", "title": "Base", "default": None},
    },
    "required": ["path"],
}
call = {"id": "call_0fypS1hVX", "type": "function", "index": 0,
        "function": {"name": "read.file", "arguments": "{\"path\":\"a.txt\"}"},
        "extra_content": {"google": {"thought_signature": "c2lnbmF0dXJl"}}}
print(json.dumps({
    "model": "MODEL",
    "store": True,
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Read a.txt", "_meta": {"ts": 1}},
        {"role": "assistant", "content": None, "reasoning_content": "I should read it.",
         "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0fypS1hVX", "name": "read.file",
         "content": "hello"},
        {"role": "user", "content": "Now read b.txt"},
    ],
    "tools": [{"type": "function",
               "function": {"name": "read.file", "description": "Read a file", "parameters": schema}}],
}))
EOF

for p in $PROVIDERS; do
    sed "s/\"MODEL\"/\"$p-model\"/" "$REQ" >"$TG_TMP/req.$p.json"
    # Control: unrewritten, the request must fail, or the check below proves nothing.
    st=$(curl -s -o "$TG_TMP/raw" -w '%{http_code}' -H 'Content-Type: application/json' \
        -H "X-Mock: strict:$p" --data-binary @"$TG_TMP/req.$p.json" "$MOCK_URL/$p/v1/chat/completions")
    if [ "$st" -ge 400 ]; then ok "$p: control, the raw request is rejected ($st)"; else not_ok "$p: control, the raw request is rejected" "status $st"; fi
    st=$(tg_req "$TG_TMP/resp" POST "/$p/v1/chat/completions" -H 'Content-Type: application/json' \
        -H "X-Mock: strict:$p" -H 'X-Mock-Then: tools' --data-binary @"$TG_TMP/req.$p.json")
    if [ "$st" = 200 ]; then
        ok "$p: strict provider accepts the rewritten request"
    else
        not_ok "$p: strict provider accepts the rewritten request" "status $st: $(head -c 700 "$TG_TMP/resp")"
    fi
    name=$(json_get "$TG_TMP/resp" choices.0.message.tool_calls.0.function.name)
    expect_eq "$p: the agent gets its own tool name back" "read.file" "$name"
done

# Legacy function calling (functions[] / function_call): Gemini has no field
# for it and Mistral forbids it (rules 36, 43), so the agent's functions go
# up as tools and its call comes back as function_call, whole and streamed.
"$PY" - >"$TG_TMP/legacy.json" <<'EOF'
import json
print(json.dumps({
    "model": "MODEL",
    "messages": [{"role": "user", "content": "Read a.txt"}],
    "functions": [{"name": "read.file", "description": "Read a file",
                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                  "required": ["path"], "additionalProperties": False}}],
    "function_call": "auto",
}))
EOF
cat >"$TG_TMP/legacy_stream.py" <<'EOF'
import json, sys
name, args, finish, calls = None, "", None, 0
for line in open(sys.argv[1]):
    if not line.startswith("data: ") or line.startswith("data: [DONE]"):
        continue
    for ch in json.loads(line[6:]).get("choices", []):
        d = ch.get("delta", {})
        calls += len(d.get("tool_calls") or [])
        fc = d.get("function_call")
        if fc:
            name = fc.get("name") or name
            args += fc.get("arguments", "")
        finish = ch.get("finish_reason") or finish
ok = isinstance(json.loads(args or "null"), dict)
print(name, finish, calls, "args-ok" if ok else "args-bad")
EOF
for p in gemini mistral; do
    sed "s/\"MODEL\"/\"$p-model\"/" "$TG_TMP/legacy.json" >"$TG_TMP/legacy.$p.json"
    st=$(tg_req "$TG_TMP/resp" POST "/$p/v1/chat/completions" -H 'Content-Type: application/json' \
        -H "X-Mock: strict:$p" -H 'X-Mock-Then: tools' --data-binary @"$TG_TMP/legacy.$p.json")
    expect_eq "$p legacy functions: strict provider accepts them as tools" 200 "$st"
    mock_last "$TG_TMP/last"
    expect_eq "$p legacy functions: upstream got no functions key" lacks "$(json_lacks "$TG_TMP/last" body functions)"
    expect_eq "$p legacy functions: upstream got the function as its one tool" 1 \
        "$(json_get "$TG_TMP/last" body.tools | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')"
    expect_eq "$p legacy functions: the agent gets function_call with its own name" "read.file" \
        "$(json_get "$TG_TMP/resp" choices.0.message.function_call.name)"
    expect_eq "$p legacy functions: finish_reason function_call" "function_call" \
        "$(json_get "$TG_TMP/resp" choices.0.finish_reason)"
    expect_eq "$p legacy functions: no tool_calls beside it" lacks \
        "$(json_lacks "$TG_TMP/resp" choices.0.message tool_calls)"
    sed 's/"function_call": "auto"/"function_call": "auto", "stream": true/' "$TG_TMP/legacy.$p.json" >"$TG_TMP/legacy.s.json"
    tg_req "$TG_TMP/sresp" POST "/$p/v1/chat/completions" -H 'Content-Type: application/json' \
        -H "X-Mock: strict:$p" -H 'X-Mock-Then: tools' --data-binary @"$TG_TMP/legacy.s.json" >/dev/null
    expect_eq "$p legacy functions, streamed: function_call deltas and finish" \
        "read.file function_call 0 args-ok" "$("$PY" "$TG_TMP/legacy_stream.py" "$TG_TMP/sresp" 2>&1)"
done
st=$(tg_req "$TG_TMP/resp" POST "/mistral/v1/chat/completions" -H 'Content-Type: application/json' \
    --data-binary '{"model":"mistral-x","messages":[{"role":"user","content":"hi"}],"functions":[{"name":"a"},{"description":"no name"}]}')
expect_eq "legacy functions: one without a name is a 400 naming it" "400 functions[1].name" \
    "$st $(json_get "$TG_TMP/resp" error.param)"

# The Responses API bridged to each strict provider: the same messy agent,
# but speaking /v1/responses (a reasoning item, function_call and
# function_call_output items, "_"-private keys on an item and at the top,
# include/store/reasoning). Each strict personality must accept the chat
# request it becomes, and the stream must end in response.completed with the
# agent's own tool name in a function_call item.
"$PY" - >"$TG_TMP/responses.json" <<'EOF'
import json
print(json.dumps({
    "model": "MODEL", "stream": True, "store": False, "instructions": "You are a coding agent.",
    "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "low"},
    "max_output_tokens": 500, "_session": {"id": 7},
    "input": [
        {"role": "user", "content": "Read a.txt", "_meta": {"ts": 1}},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Read it."}],
         "encrypted_content": "gAAAAB"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_0fypS1hVXabcdef", "name": "read.file",
         "arguments": "{\"path\":\"a.txt\"}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_0fypS1hVXabcdef", "output": "hello"},
        {"role": "user", "content": [{"type": "input_text", "text": "Now read b.txt"}]},
    ],
    "tools": [{"type": "function", "name": "read.file", "description": "Read a file", "strict": False,
               "parameters": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                              "additionalProperties": False,
                              "properties": {"path": {"type": "string"}, "enc": {"type": ["string", "null"]}},
                              "required": ["path"]}}],
}))
EOF
cat >"$TG_TMP/responses_stream.py" <<'EOF'
import json, sys
types, calls, seq = [], [], []
ev = None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("event: "):
        ev = line[7:]
    elif line.startswith("data: "):
        d = json.loads(line[6:])
        assert d["type"] == ev, (d["type"], ev)
        types.append(ev)
        seq.append(d["sequence_number"])
        if ev == "response.output_item.done" and d["item"]["type"] == "function_call":
            calls.append(d["item"]["name"])
assert seq == list(range(len(seq))), seq
print(types[-1] if types else "nothing", ",".join(calls))
EOF
for p in gemini anthropic mistral groq fireworks cerebras; do
    sed "s/\"MODEL\"/\"$p-model\"/" "$TG_TMP/responses.json" >"$TG_TMP/responses.$p.json"
    st=$(tg_req "$TG_TMP/resp" POST "/$p/v1/responses" -H 'Content-Type: application/json' \
        -H "X-Mock: strict:$p" -H 'X-Mock-Then: tools' --data-binary @"$TG_TMP/responses.$p.json")
    got=$("$PY" "$TG_TMP/responses_stream.py" "$TG_TMP/resp" 2>&1)
    if [ "$st" = 200 ] && [ "$got" = "response.completed read.file" ]; then
        ok "$p: a Responses API agent through the bridge is accepted and gets its call"
    else
        not_ok "$p: a Responses API agent through the bridge is accepted and gets its call" \
            "status $st, $got: $(head -c 900 "$TG_TMP/resp")"
    fi
done

# R19: Gemini 3 refuses a tool-call turn replayed without its thought
# signature, which agents that rebuild their messages drop.
"$PY" - >"$TG_TMP/nosig.json" <<'EOF'
import json
print(json.dumps({
    "model": "gemini-3-flash-preview",
    "messages": [
        {"role": "user", "content": "Read a.txt"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
    ],
    "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}],
}))
EOF
st=$(curl -s -o "$TG_TMP/raw" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H "X-Mock: strict:gemini" --data-binary @"$TG_TMP/nosig.json" "$MOCK_URL/gemini/v1/chat/completions")
expect_eq "gemini 3 R19: control, a turn without a thought signature is refused" 400 "$st"
st=$(tg_req "$TG_TMP/resp" POST "/gemini/v1/chat/completions" -H 'Content-Type: application/json' \
    -H "X-Mock: strict:gemini" --data-binary @"$TG_TMP/nosig.json")
if [ "$st" = 200 ]; then
    ok "gemini 3 R19: accepted through toolgate"
else
    not_ok "gemini 3 R19: accepted through toolgate" "status $st: $(head -c 700 "$TG_TMP/resp")"
fi

stop_toolgate
finish
