#!/usr/bin/env python3
"""signatures.py -- the two turns of a replayed Gemini call, for replicas.sh
(issue 31): turn 1 asks the mock's scripted discovery model, which signs
its calls (X-Mock-Signature); turn 2 replays the call the agent got
without any signature, as a client that drops extra_content does (and as
the Messages and Responses bridges must).

    signatures.py first API STREAM TOOLS          # turn 1's body
    signatures.py replay API STREAM ANSWER FIRST  # turn 2's body
    signatures.py signed LAST                     # "n/m" signed replayed calls

API: chat, messages or responses; STREAM: true or false; ANSWER: turn 1's
answer (JSON or SSE); FIRST: turn 1's body; LAST: the mock's /_last.
"""
import json
import sys

SIG = "sig-Zm9v"
TASK = "weather forecast"


def events(text):
    for line in text.splitlines():
        if line.startswith("data: ") and line[6:] != "[DONE]":
            yield json.loads(line[6:])


def first(api, stream, tools):
    tools = json.loads(tools)
    if api == "chat":
        body = {"model": "gemini-3-pro", "messages": [{"role": "user", "content": TASK}],
                "tools": tools}
    elif api == "messages":
        body = {"model": "gemini-3-pro", "max_tokens": 100,
                "messages": [{"role": "user", "content": TASK}],
                "tools": [{"name": t["function"]["name"], "description": t["function"]["description"],
                           "input_schema": t["function"]["parameters"]} for t in tools]}
    else:
        body = {"model": "gemini-3-pro", "store": False, "input": TASK,
                "tools": [dict(type="function", **t["function"]) for t in tools]}
    if stream == "true":
        body["stream"] = True
    return body


def chat_call(text):
    if text.lstrip().startswith("{"):
        return json.loads(text)["choices"][0]["message"]["tool_calls"][0]
    call = {"function": {"arguments": ""}}
    for ev in events(text):
        for ch in ev.get("choices", []):
            for tc in ch.get("delta", {}).get("tool_calls", []) or []:
                for k, v in tc.items():
                    if k == "function":
                        for fk, fv in v.items():
                            call["function"][fk] = call["function"].get(fk, "") + fv \
                                if fk == "arguments" else fv
                    elif k != "index":
                        call[k] = v
    return call


def tool_use(text):
    if text.lstrip().startswith("{"):
        return [b for b in json.loads(text)["content"] if b["type"] == "tool_use"][0]
    use, args = None, ""
    for ev in events(text):
        if ev.get("type") == "content_block_start" and ev["content_block"]["type"] == "tool_use":
            use = dict(ev["content_block"])
        elif ev.get("type") == "content_block_delta" and \
                ev["delta"].get("type") == "input_json_delta":
            args += ev["delta"]["partial_json"]
    use["input"] = json.loads(args or "{}")
    return use


def function_call(text):
    if text.lstrip().startswith("{"):
        out = json.loads(text)["output"]
    else:
        out = [ev["response"]["output"] for ev in events(text)
               if ev.get("type") == "response.completed"][0]
    return [o for o in out if o["type"] == "function_call"][0]


def replay(api, stream, answer, body):
    text = open(answer).read()
    body = json.loads(body)
    if api == "chat":
        call = chat_call(text)
        call.pop("extra_content", None)
        body["messages"] += [{"role": "assistant", "tool_calls": [call]},
                             {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}]
    elif api == "messages":
        use = tool_use(text)
        body["messages"] += [{"role": "assistant", "content": [use]},
                             {"role": "user", "content": [{"type": "tool_result",
                                                           "tool_use_id": use["id"],
                                                           "content": "sunny"}]}]
    else:
        fc = function_call(text)
        body["input"] = [{"role": "user", "content": TASK},
                         {"type": "function_call", "call_id": fc["call_id"], "name": fc["name"],
                          "arguments": fc["arguments"]},
                         {"type": "function_call_output", "call_id": fc["call_id"],
                          "output": "sunny"}]
    return body


def signed(last):
    b = json.loads(json.load(open(last))["body"])
    calls = [c for m in b["messages"] for c in m.get("tool_calls", [])
             if c["id"].startswith("call_disc")]
    ok = [c for c in calls
          if c.get("extra_content", {}).get("google", {}).get("thought_signature") == SIG]
    return "%d/%d" % (len(ok), len(calls))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "first":
        print(json.dumps(first(sys.argv[2], sys.argv[3], sys.argv[4])))
    elif cmd == "replay":
        print(json.dumps(replay(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])))
    else:
        print(signed(sys.argv[2]))
