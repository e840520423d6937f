#!/usr/bin/env python3
"""stream_call_vectors.py -- writes the vectors of stream_calls.c's call
state machine (tg_rs_find_call's table) that the cases before issue 27 did not
cover: test/vectors/repair/R04-new-id-*.json and R09-summary-*.json. Each
is the shape a public thread shows, streamed (these are stream-only
shapes). Run from the repository root; the files are committed."""
import json

BASE = json.load(open("test/vectors/repair/R04-index0-reused-ids.json"))
TOOLS = BASE["tools"]


def chunk(delta, finish=None, usage=None):
    c = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return c


def frag(index=None, id=None, name=None, args=None, type_=False):
    f = {}
    if index is not None:
        f["index"] = index
    if id is not None:
        f["id"] = id
    if type_:
        f["type"] = "function"
    fn = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    f["function"] = fn
    return f


def call(i, id, name, args):
    return {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}


ROLE = chunk({"role": "assistant"})
W = '{"location":"Paris"}'
R = '{"path":"/tmp/a"}'

CASES = [
    ("R04-new-id-every-chunk", "vllm",
     "one call streamed under a new id on every chunk, same index (OCI Llama through LiteLLM, "
     "BerriAI/litellm#40040): one call, its first id, every argument byte",
     [frag(0, "call_a", "get_weather", "", True), frag(0, "call_b", None, '{"location":'),
      frag(0, "call_c", None, '"Paris"}')],
     [call(0, "call_a", "get_weather", W)]),
    ("R04-new-id-every-chunk-openai", "openai",
     "as R04-new-id-every-chunk on a dialect that relays calls live (repair.stream_args)",
     [frag(0, "call_a", "get_weather", "", True), frag(0, "call_b", None, '{"location":'),
      frag(0, "call_c", None, '"Paris"}')],
     "live"),
    ("R04-new-id-every-chunk-noindex", "vllm",
     "a new id on every chunk and no index: the open call goes on",
     [frag(None, "call_a", "get_weather", "", True), frag(None, "call_b", None, '{"location":'),
      frag(None, "call_c", None, '"Paris"}')],
     [call(0, "call_a", "get_weather", W)]),
    ("R04-new-id-every-chunk-two-calls", "vllm",
     "a new id on every chunk, two calls told apart by their index and name",
     [frag(0, "a1", "get_weather", "", True), frag(0, "a2", None, '{"location":'),
      frag(0, "a3", None, '"Paris"}'), frag(1, "b1", "read_file", "", True),
      frag(1, "b2", None, '{"path":'), frag(1, "b3", None, '"/tmp/a"}')],
     [call(0, "a1", "get_weather", W), call(1, "b1", "read_file", R)]),
    ("R09-summary-repeat", "vllm",
     "after a call streamed in fragments, a chunk repeats its id, index, name and whole "
     "arguments (BerriAI/litellm#20480): one call, not a second one suffixed _2",
     [frag(0, "call_a", "get_weather", "", True), frag(0, None, None, '{"location":'),
      frag(0, None, None, '"Paris"}'), frag(0, "call_a", "get_weather", '{"location": "Paris"}', True)],
     [call(0, "call_a", "get_weather", W)]),
    ("R09-summary-repeat-openai", "openai",
     "as R09-summary-repeat on a dialect that relays calls live: the summary adds nothing",
     [frag(0, "call_a", "get_weather", "", True), frag(0, None, None, '{"location":'),
      frag(0, None, None, '"Paris"}'), frag(0, "call_a", "get_weather", '{"location": "Paris"}', True)],
     "live"),
    ("R09-summary-two-calls", "vllm",
     "two calls, then a summary of each: two calls",
     [frag(0, "call_a", "get_weather", "", True), frag(0, None, None, W),
      frag(1, "call_b", "read_file", "", True), frag(1, None, None, R),
      frag(0, "call_a", "get_weather", W, True), frag(1, "call_b", "read_file", R, True)],
     [call(0, "call_a", "get_weather", W), call(1, "call_b", "read_file", R)]),
]

def main():
    for name, dialect, note, frags, calls in CASES:
        sse = [ROLE] + [chunk({"tool_calls": [f]}) for f in frags] + [chunk({}, "tool_calls"), "[DONE]"]
        v = {"quirk": name.split("-")[0], "note": note, "dialect": dialect, "sse": sse}
        if calls == "live":  # relayed as the fragments come, under the first id
            v["expected_sse"] = [ROLE, chunk({"tool_calls": [call(0, "call_a", "get_weather", "")]}),
                                 chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"location":'}}]}),
                                 chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
                                 chunk({}, "tool_calls"), "[DONE]"]
        else:
            v["expected_sse"] = [ROLE] + [chunk({"tool_calls": [c]}) for c in calls] + \
                [chunk({}, "tool_calls"), "[DONE]"]
        v["tools"] = TOOLS
        with open("test/vectors/repair/%s.json" % name, "w") as f:
            json.dump(v, f, indent=1)
            f.write("\n")

    # the summary in the finish chunk itself
    v = json.load(open("test/vectors/repair/R09-summary-repeat.json"))
    v["note"] = "the summary of a call comes in the chunk that carries finish_reason"
    last = v["sse"][-3]
    last["choices"][0]["finish_reason"] = "tool_calls"
    v["sse"] = v["sse"][:-2] + ["[DONE]"]
    with open("test/vectors/repair/R09-summary-with-finish.json", "w") as f:
        json.dump(v, f, indent=1)
        f.write("\n")


if __name__ == "__main__":  # held_fragment_vectors.py imports frag
    main()
