#!/usr/bin/env python3
"""held_fragment_vectors.py -- writes test/vectors/repair/stream-held-*.json:
streams whose calls are held (dialects without repair.stream_args: gemini,
mistral, groq), for stream_relay.c tg_rs_held_fragment, the scan that keeps
a held call's plain argument fragments without a parse. Each vector runs
with every scan on and off (test_repair.c run_stream: the same bytes); the
cases are the fragments the scan takes and the ones it must leave to the
parse (an id or a name in the fragment, R4 index reuse, R13 arguments as
an object, R20 objects in a row, broken JSON, interleaved calls, a finish
waiting for open arguments, fragments after the finish, a new envelope).
Run from the repository root; the files are committed."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stream_call_vectors import frag  # noqa: E402  one tool-call fragment

TOOLS = json.load(open("test/vectors/repair/R04-index0-reused-ids.json"))["tools"]


def chunk(delta, finish=None, model="m"):
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def fc(f, finish=None, model="m"):
    return chunk({"tool_calls": [f]}, finish, model)


def call(i, id, name, args):
    return {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}


def out(c, model="m"):
    return chunk({"tool_calls": [c]}, None, model)


ROLE = chunk({"role": "assistant"})
FIN = chunk({}, "tool_calls")
START = fc(frag(0, "call_a", "get_weather", "", True))
W = '{"location":"Paris"}'
S = '{"queries":["x"]}'
# a fragment's bytes as a provider may escape them (\/, \u escapes of the
# Basic Multilingual Plane, an escaped backslash): the scan decodes them as jansson does
RAW_ESC = ('raw:data: {"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"m",'
           '"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
           '{"arguments":"is \\u00e9t\\u00e9 \\/ \\\\n"}}]},"finish_reason":null}]}\n\n')
# the same with whitespace between the tokens (a provider's pretty writer)
RAW_WS = ('raw:data: { "id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, '
          '"model": "m", "choices": [ { "index": 0, "delta": { "tool_calls": [ { "index": 0, '
          '"function": { "arguments": "\\"}" } } ] }, "finish_reason": null, "logprobs": null } ], '
          '"usage": null }\n\n')

CASES = [
    ("stream-held-gemini-fragments", "gemini",
     "a held call's plain fragments (gemini: no repair.stream_args) are kept without a parse, "
     "escaped and pretty-printed ones too; each event that gives the agent nothing is answered "
     "by a keepalive (interval 0), as on the parse",
     [ROLE, START, fc(frag(0, None, None, '{"location": "Par')), RAW_ESC, RAW_WS, FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", '{"location": "Paris \u00e9t\u00e9 / \\n"}')), FIN,
      "[DONE]"],
     {"keepalive_ms": 0, "keepalives": 4}),
    ("stream-held-gemini-r4", "gemini",
     "R4 on a held call: the index reused by a second call with its own id and name; the "
     "fragment that starts it takes the parse, the fragments of each call the scan",
     [ROLE, START, fc(frag(0, None, None, '{"location":')), fc(frag(0, None, None, '"Paris"}')),
      fc(frag(0, "call_b", "search", "", True)), fc(frag(0, None, None, '{"queries":')),
      fc(frag(0, None, None, '["x"]}')), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), out(call(1, "call_b", "search", S)), FIN,
      "[DONE]"], None),
    ("stream-held-gemini-r20", "gemini",
     "R20 on a held call: two objects in a row in its fragments; kept as they come, split "
     "into two calls when the call ends",
     [ROLE, START, fc(frag(0, None, None, '{"location":"Pa')),
      fc(frag(0, None, None, 'ris"}{"loc')), fc(frag(0, None, None, 'ation":"Rome"}')), FIN,
      "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)),
      out(call(1, "<id>", "get_weather", '{"location":"Rome"}')), FIN, "[DONE]"], None),
    ("stream-held-mistral-broken-json", "mistral",
     "a held call's fragments that are not JSON (single quotes, a trailing comma) are kept as "
     "they come and fixed whole when the call ends",
     [ROLE, START, fc(frag(0, None, None, "{'location': ")), fc(frag(0, None, None, "'Paris',}")),
      FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), FIN, "[DONE]"], None),
    ("stream-held-groq-new-ids", "groq",
     "a new id on some fragments of one index (OCI Llama through LiteLLM): those take the "
     "parse, the plain ones the scan; one call under its first id",
     [ROLE, START, fc(frag(0, "call_b", None, '{"location":')), fc(frag(0, None, None, '"Pa')),
      fc(frag(0, "call_c", None, 'ris"')), fc(frag(0, None, None, "}")), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), FIN, "[DONE]"], None),
    ("stream-held-gemini-finish-waits", "gemini",
     "the finish comes while the held call's arguments are open and fragments follow it: the "
     "finish waits for them, so those fragments take the parse (it releases the finish)",
     [ROLE, START, fc(frag(0, None, None, '{"location":')), FIN, fc(frag(0, None, None, '"Pa')),
      fc(frag(0, None, None, 'ris"}')), "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), FIN, "[DONE]"],
     {"keepalive_ms": 0, "keepalives": 4}),
    ("stream-held-gemini-late-fragment", "gemini",
     "a fragment for a call that already went out whole (R6: its name came after its "
     "arguments and a second call): the parse forwards it as a late fragment (and counts "
     "it), so the scan must leave it to the parse (the call is sent)",
     [ROLE, fc(frag(0, "call_a", None, W)), fc(frag(1, "call_b", "search", "", True)),
      fc(frag(0, None, "get_weather", "")), fc(frag(0, None, None, " ")),
      fc(frag(1, None, None, S)), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)),
      out({"index": 0, "function": {"arguments": " "}}), out(call(1, "call_b", "search", S)),
      FIN, "[DONE]"], None),
    ("stream-held-gemini-interleaved", "gemini",
     "two held calls whose fragments alternate by index: a fragment of the call that is not "
     "the current one takes the parse",
     [ROLE, START, fc(frag(1, "call_b", "search", "", True)), fc(frag(0, None, None, '{"location":')),
      fc(frag(1, None, None, '{"queries":')), fc(frag(0, None, None, '"Paris"}')),
      fc(frag(1, None, None, '["x"]}')), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), out(call(1, "call_b", "search", S)), FIN,
      "[DONE]"], None),
    ("stream-held-gemini-r13", "gemini",
     "R13 in a held call: one fragment's arguments are an object, not a string (the scan "
     "leaves it to the parse); the plain fragments around it are kept",
     [ROLE, START, fc(frag(0, None, None, "")), fc(frag(0, None, None, {"location": "Paris"})),
      fc(frag(0, None, None, "")), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), FIN, "[DONE]"], None),
    ("stream-held-gemini-envelope", "gemini",
     "the envelope changes in the middle of a held call (another model): that fragment takes "
     "the parse, the ones after it the scan again; the call goes out in the latest envelope",
     [ROLE, START, fc(frag(0, None, None, '{"location":')),
      fc(frag(0, None, None, '"Pa'), model="m2"), fc(frag(0, None, None, 'ris"}'), model="m2"),
      chunk({}, "tool_calls", "m2"), "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W), "m2"), chunk({}, "tool_calls", "m2"),
      "[DONE]"], None),
    ("stream-held-gemini-name-later", "gemini",
     "R6 on a held call: fragments before the name (the scan keeps them on the unnamed call), "
     "then the name",
     [ROLE, fc(frag(0, "call_a", None, '{"loc')), fc(frag(0, None, None, 'ation":')),
      fc(frag(0, None, None, '"Paris"}')), fc(frag(0, None, "get_weather", "")), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), FIN, "[DONE]"], None),
]



def write(cases, tools):
    """Each case (name, dialect, note, sse, expected, extra) as a stream_args
vector in test/vectors/repair/ (held_finish_vectors.py writes its own with it)."""
    for name, dialect, note, sse, expected, extra in cases:
        v = {"quirk": "stream_args", "note": note, "dialect": dialect, "sse": sse,
             "expected_sse": expected, "tools": tools}
        if extra:
            v.update(extra)
        with open("test/vectors/repair/%s.json" % name, "w") as f:
            json.dump(v, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    write(CASES, TOOLS)
