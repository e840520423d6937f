#!/usr/bin/env python3
"""api_sse_upstream.py -- a provider that streams whatever the request says,
for forced_stream.sh: POST .../messages answers an Anthropic Messages event
stream (thinking with its signature, text in two pieces, a tool_use whose
input comes in two partial_json pieces); POST .../responses a Responses
event stream (text, then a function_call, then response.completed). A model
ending in "-err" gets an error event part way; one ending in "-cut" (Responses)
loses its terminal event. Prints port=N once it listens.
"""
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def messages(model):
    evs = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                              "model": model, "content": [], "stop_reason": None,
                                              "stop_sequence": None,
                                              "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me see."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG1"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Checking "}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Paris."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": "{\"location\":"}},
        {"type": "content_block_delta", "index": 2,
         "delta": {"type": "input_json_delta", "partial_json": " \"Paris\"}"}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 42}},
        {"type": "message_stop"},
    ]
    if model.endswith("-err"):
        evs = evs[:3] + [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    return evs


def responses(model):
    base = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
            "model": model, "output": []}
    text = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Checking Paris.", "annotations": []}]}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
            "arguments": "{\"location\":\"Paris\"}", "status": "completed"}
    evs = [
        {"type": "response.created", "response": base},
        {"type": "response.output_item.added", "output_index": 0, "item": dict(text, status="in_progress", content=[])},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Checking Paris."},
        {"type": "response.output_item.done", "output_index": 0, "item": text},
        {"type": "response.output_item.added", "output_index": 1, "item": dict(call, arguments="", status="in_progress")},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": call["arguments"]},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        {"type": "response.completed", "response": dict(base, status="completed", output=[text, call])},
    ]
    if model.endswith("-cut"):
        evs = evs[:-1]
    if model.endswith("-err"):
        evs = evs[:3] + [{"type": "error", "code": "server_error", "message": "The model failed."}]
    for i, e in enumerate(evs):
        e["sequence_number"] = i
    return evs


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        model = json.loads(self.rfile.read(n) or b"{}").get("model", "m")
        evs = messages(model) if self.path.endswith("/messages") else responses(model)
        body = "".join("event: %s\ndata: %s\n\n" % (e["type"], json.dumps(e)) for e in evs).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("port=%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
