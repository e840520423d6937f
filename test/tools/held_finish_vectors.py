#!/usr/bin/env python3
"""held_finish_vectors.py -- writes test/vectors/repair/stream-held-finish-*.json:
streams whose calls are held (gemini: no repair.stream_args) up to the
finish, for stream_relay.c held_finish, which writes such calls from the
scan of the finish when their repair is the identity, without the parse.
Each vector runs with every scan on and off (test_repair.c run_stream: the
same bytes); the cases are the finishes it writes and the ones it must leave
to the parse (content held by R12 before the call, two held calls with one
id). Run from the repository root; the files are committed."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stream_call_vectors import frag  # noqa: E402  one tool-call fragment
from held_fragment_vectors import write  # noqa: E402  the vectors' files

TOOLS = json.load(open("test/vectors/repair/R04-index0-reused-ids.json"))["tools"]


def chunk(delta, finish=None, index=0):
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def fc(f, finish=None, index=0):
    return chunk({"tool_calls": [f]}, finish, index)


def call(i, id, name, args):
    return {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}


def out(c, index=0):
    return chunk({"tool_calls": [c]}, None, index)


ROLE = chunk({"role": "assistant"})
FIN = chunk({}, "tool_calls")
W = '{"location":"Paris"}'
R = '{"path":"/tmp/a"}'

CASES = [
    ("stream-held-finish-escapes", "gemini",
     "a held call released by its finish, written from the scan: arguments with escaped "
     "quotes and backslashes, text past ASCII and a newline and a tab between the tokens "
     "are escaped as the parse would write them",
     [ROLE, fc(frag(0, "call_a", "get_weather", "", True)),
      fc(frag(0, None, None, '{"location":"Z\u00fcrich \\"old\\" \\\\ \\t \u2603",')),
      fc(frag(0, None, None, '\n\t"unit" : "c" }')), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather",
                     '{"location":"Z\u00fcrich \\"old\\" \\\\ \\t \u2603",\n\t"unit" : "c" }')),
      FIN, "[DONE]"], None),
    ("stream-held-finish-two-calls", "gemini",
     "two held calls (the first sent when the second starts), the second released by the "
     "finish; then a finish of another choice whose one call is released the same way",
     [ROLE, fc(frag(0, "call_a", "get_weather", W, True)),
      fc(frag(1, "call_b", "read_file", "", True)), fc(frag(1, None, None, R)), FIN,
      chunk({"role": "assistant"}, None, 1), fc(frag(0, "call_c", "read_file", R, True), None, 1),
      chunk({}, "length", 1), "[DONE]"],
     [ROLE, out(call(0, "call_a", "get_weather", W)), out(call(1, "call_b", "read_file", R)),
      FIN, chunk({"role": "assistant"}, None, 1),
      out(call(0, "call_c", "read_file", R), 1), chunk({}, "length", 1), "[DONE]"], None),
    ("stream-held-finish-same-id", "gemini",
     "three held calls at the finish, the first and the third with one id (R9: interleaved "
     "indexes keep the first unsent when the third starts): the parse renames the third, so "
     "the finish is left to it",
     [ROLE, fc(frag(0, "call_x", "get_weather", "{", True)),
      fc(frag(1, "call_y", "read_file", "{", True)), fc(frag(0, None, None, '"location":"Paris"}')),
      fc(frag(1, None, None, '"path":')),
      fc(frag(2, "call_x", "get_weather", '{"location":"Rome"}', True)),
      fc(frag(1, None, None, '"/tmp/a"}')), FIN, "[DONE]"],
     [ROLE, out(call(0, "call_x", "get_weather", W)), out(call(1, "call_y", "read_file", R)),
      out(call(2, "call_x_2", "get_weather", '{"location":"Rome"}')), FIN, "[DONE]"], None),
    ("stream-held-finish-clock", "gemini",
     "the keepalive reads the caller's clock (tg_stream_clock, two hours ahead here, the "
     "interval one hour): the first event, which gives the agent nothing, is answered by a "
     "keepalive, the next not (the clock stands still); the stream's own clock would give "
     "none",
     [fc(frag(0, "call_a", "get_weather", "", True)), fc(frag(0, None, None, W)), FIN,
      "[DONE]"],
     [chunk({"role": "assistant", "tool_calls": [call(0, "call_a", "get_weather", W)]}), FIN,
      "[DONE]"],
     {"keepalive_ms": 3600000, "clock_ahead_ms": 7200000, "keepalives": 1}),
]

R12_CASES = [
    ("stream-held-finish-r12-content", "gemini",
     "text_tool_calls on: text that could open call markup (<tool_) comes while a call is "
     "held and is held too (R12); the finish sends it before the call, so the finish is left "
     "to the parse",
     [ROLE, fc(frag(0, "call_a", "get_weather", "", True)), fc(frag(0, None, None, W)),
      chunk({"content": "Checking <tool_"}), FIN, "[DONE]"],
     [ROLE, chunk({"content": "Checking "}), chunk({"content": "<tool_"}),
      out(call(0, "call_a", "get_weather", W)), FIN, "[DONE]"], {"text_tool_calls": True}),
]

write(CASES + R12_CASES, TOOLS)
