#!/usr/bin/env python3
"""r12_vectors.py -- writes test/vectors/repair/R12-fmt-*.json: one vector per
row of repair_text.c's format table that had none, each the model's text as
a public source shows it (named in "note"), whole and streamed (the text cut
into chunks of a few characters, as a server without the model's tool parser
streams it). Run from the repository root; the files are committed, so this
only needs running again when a sample changes."""
import json

KIMI = json.load(open("test/vectors/repair/R12-kimi-k2-tokens.json"))
TOOLS, REQUEST = KIMI["tools"], KIMI["request"]
W = ("get_weather", {"location": "Paris"})
R = ("read_file", {"path": "/tmp/a"})
S = ("search", {"queries": ["a", "b"], "limit": 3})
B, E, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
CB, CE = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
D = "｜DSML｜"

CASES = [
    ("deepseek-v3", "DeepSeek-V3 through LiteLLM, google/adk-python#5654; vllm deepseekv3_tool_parser.py",
     CB + B + "function" + SEP + "get_weather\n```json\n{\"location\": \"Paris\"}\n```" + E + "\n"
     + B + "function" + SEP + "read_file\n```json\n{\"path\": \"/tmp/a\"}\n```" + E + CE, [W, R]),
    ("deepseek-v31", "DeepSeek-V3.1/V3.2 on sglang, sgl-project/sglang#17320; vllm deepseekv31_tool_parser.py",
     CB + B + "get_weather" + SEP + "{\"location\": \"Paris\"}" + E + B + "read_file" + SEP
     + "{\"path\": \"/tmp/a\"}" + E + CE, [W, R]),
    ("deepseek-r1-no-closers", "DeepSeek-R1(-0528) as llama-server and ik_llama.cpp#652 show it: the V3 form, cut before its closers",
     CB + B + "function" + SEP + "get_weather\n```json\n{\"location\": \"Paris\"}\n```", [W]),
    ("deepseek-v32-dsml", "DeepSeek-V3.2 DSML: sglang python/sglang/srt/function_call/deepseekv32_detector.py",
     "<" + D + "function_calls>\n<" + D + "invoke name=\"get_weather\">\n<" + D
     + "parameter name=\"location\" string=\"true\">Paris</" + D + "parameter>\n</" + D + "invoke>\n<"
     + D + "invoke name=\"search\">\n<" + D + "parameter name=\"queries\" string=\"false\">[\"a\", \"b\"]</"
     + D + "parameter>\n<" + D + "parameter name=\"limit\" string=\"false\">3</" + D + "parameter>\n</"
     + D + "invoke>\n</" + D + "function_calls>", [W, S]),
    ("glm45-arg-key", "GLM-4.5/4.6 chat template; vllm glm4_moe_tool_parser.py",
     "<tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
     "<tool_call>search\n<arg_key>queries</arg_key>\n<arg_value>[\"a\", \"b\"]</arg_value>\n"
     "<arg_key>limit</arg_key>\n<arg_value>3</arg_value>\n</tool_call>", [W, S]),
    ("harmony-commentary", "gpt-oss harmony, https://cookbook.openai.com/articles/openai-harmony (function calling); vllm openai_tool_parser.py",
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"Paris\"}<|call|>", [W]),
    ("harmony-two-headers", "gpt-oss harmony, both header orders of the cookbook: recipient in the channel, and in the role",
     "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"Paris\"}<|call|>"
     "<|start|>assistant to=functions.read_file<|channel|>commentary json<|message|>{\"path\":\"/tmp/a\"}<|call|>", [W, R]),
    ("llama-python-tag", "Llama 3.1 model card (JSON based tool calling after <|python_tag|>, ended by <|eom_id|>); vllm llama_tool_parser.py",
     "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}<|eom_id|>", [W]),
    ("jamba-tool-calls", "AI21 Jamba: vllm jamba_tool_parser.py (<tool_calls>[...]</tool_calls>)",
     "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}, "
     "{\"name\": \"read_file\", \"arguments\": {\"path\": \"/tmp/a\"}}]</tool_calls>", [W, R]),
    ("minimax-m1-lines", "MiniMax-M1: vllm minimax_tool_parser.py (one JSON object a line)",
     "<tool_calls>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n"
     "{\"name\": \"read_file\", \"arguments\": {\"path\": \"/tmp/a\"}}\n</tool_calls>", [W, R]),
    ("minimax-m2-invoke", "MiniMax-M2: vllm minimax_m2_tool_parser.py",
     "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"location\">Paris</parameter>\n</invoke>\n</minimax:tool_call>", [W]),
    ("seed-oss", "ByteDance Seed-OSS: vllm seed_oss_tool_parser.py",
     "<seed:tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n</function>\n</seed:tool_call>", [W]),
    ("pythonic-list", "pythonic calls as vLLM's pythonic_tool_parser.py reads them (Llama 3.2/4), written as text by a server without it",
     "[get_weather(location=\"Paris\"), search(queries=['a', 'b'], limit=3)]", [W, S]),
    ("pythonic-after-text", "a pythonic call list on its own line after prose, vllm-project/vllm#22917",
     "I will call the tools.\n[get_weather(location=\"Paris\"), read_file(path=\"/tmp/a\")]", [W, R],
     ["I will ", "call th", "e tools", ".", "\n"]),  # the newline waits with the list
    ("lfm2-pythonic", "LFM2/LFM2.5 (Liquid) tokens around a pythonic list, lmstudio-ai/lmstudio-bug-tracker#1979",
     "<|tool_call_start|>[read_file(path=\"/tmp/a\")]<|tool_call_end|>", [R]),
    ("gemma4-call", "Gemma 4's call:NAME(key: value), NousResearch/hermes-agent#7449",
     "<|tool_call>call:get_weather(location: \"Paris\")<tool_call|><|tool_call>call:search(queries: [\"a\", \"b\"], limit: 3)<tool_call|>", [W, S]),
    ("gemma4-paren", "Gemma 4 through an OpenAI-compatible API, NousResearch/hermes-agent#7449 (call:NAME(k: v), two blocks)",
     "<|tool_call>call:get_weather(location: \"Paris\")<tool_call|><|tool_call>call:read_file(path: '/tmp/a')<tool_call|>", [W, R]),
    ("gemma4-brace", "Gemma 4's own form with <|\"|> quotes, waybarrios/vllm-mlx#274 gemma4_tool_parser.py",
     "<|tool_call>call:search{queries:[<|\"|>a<|\"|>,<|\"|>b<|\"|>],limit:3}<tool_call|>", [S]),
    ("pythonic-literals", "pythonic arguments as Python literals: both quotes with escapes, numbers, True/None, a list and a dict (vllm pythonic_tool_parser.py reads them with ast)",
     "[search(queries=['it\\'s', \"say \\\"hi\\\"\\n\"], limit=3, exact=True, score=-1.5, "
     "filter={'kind': 'doc', 'max': None}, note='caf\\u00e9 [x]')]",
     [("search", {"queries": ["it's", "say \"hi\"\n"], "limit": 3, "exact": True, "score": -1.5,
                  "filter": {"kind": "doc", "max": None}, "note": "caf\u00e9 [x]"})]),
    ("internlm-action", "InternLM2/Intern-S1 action tokens, sgl-project/sglang#14866 (internlm_detector.py)",
     "<|action_start|><|plugin|>\n{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}<|action_end|>", [W]),
]


def chunk(delta, finish=None):
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def compact(a):
    return json.dumps(a, separators=(",", ":"), ensure_ascii=False)


for name, note, text, calls, *prose in CASES:
    pieces = prose[0] if prose else []  # content as the stream gives it
    prose = "".join(pieces) or None
    msg_calls = [{"id": "<id>", "type": "function", "function": {"name": n, "arguments": compact(a)}}
                 for n, a in calls]
    sse = [chunk({"role": "assistant", "content": ""})]
    sse += [chunk({"content": text[i:i + 7]}) for i in range(0, len(text), 7)]
    sse += [chunk({}, "stop"), "[DONE]"]
    exp_sse = [chunk({"role": "assistant", "content": ""})]
    exp_sse += [chunk({"content": x}) for x in pieces]
    exp_sse += [chunk({"tool_calls": [dict(index=i, **c)]}) for i, c in enumerate(msg_calls)]
    exp_sse += [chunk({}, "tool_calls"), "[DONE]"]
    resp = {"id": "r", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}]}
    exp = json.loads(json.dumps(resp))
    exp["choices"][0]["message"] = {"role": "assistant", "content": prose, "tool_calls": msg_calls}
    exp["choices"][0]["finish_reason"] = "tool_calls"
    v = {"quirk": "R12", "note": note, "dialect": "vllm", "response": resp, "expected": exp,
         "sse": sse, "expected_sse": exp_sse, "tools": TOOLS, "text_tool_calls": True,
         "request": REQUEST}
    with open("test/vectors/repair/R12-fmt-%s.json" % name, "w") as f:
        json.dump(v, f, indent=1, ensure_ascii=False)
        f.write("\n")


# names mapped back: the model writes the name the target saw (gemini
# renamed "fs/read file"); the agent gets its own name back
RENAMED = {"type": "function", "function": {"name": "fs/read file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
    "required": ["path"]}}}
text = CB + B + "fs_read_file" + SEP + '{"path": "/a", "lines": 3}' + E + CE
c = [{"id": "<id>", "type": "function", "function": {"name": "fs/read file",
                                                     "arguments": compact({"path": "/a", "lines": 3})}}]
sse = [chunk({"role": "assistant", "content": ""})]
sse += [chunk({"content": text[i:i + 7]}) for i in range(0, len(text), 7)]
sse += [chunk({}, "stop"), "[DONE]"]
resp = {"id": "r", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}]}
exp = json.loads(json.dumps(resp))
exp["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": c}
exp["choices"][0]["finish_reason"] = "tool_calls"
v = {"quirk": "R12", "note": "DeepSeek V3.1 tokens naming the tool as gemini saw it (fs_read_file): "
     "the agent gets its own name back (fs/read file)", "dialect": "gemini", "request_stages": True,
     "response": resp, "expected": exp, "sse": sse,
     "expected_sse": [chunk({"role": "assistant", "content": ""}),
                      chunk({"tool_calls": [dict(index=0, **c[0])]}), chunk({}, "tool_calls"), "[DONE]"],
     "text_tool_calls": True, "tools": [RENAMED],
     "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [RENAMED]}}
with open("test/vectors/repair/R12-fmt-deepseek-v31-renamed.json", "w") as f:
    json.dump(v, f, indent=1, ensure_ascii=False)
    f.write("\n")
