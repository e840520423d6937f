"""deferred_recall.py -- search_tools' R@1 and R@5 through toolgate for the
tasks of a Claude Code catalog run, with its MCP tools known by name only
(deferred) and with their definitions (issue 31).

    TG_CATALOG_AGENT=claude TG_AGENT_QUERIES=30 TG_AGENT_KEEP=DIR \
        sh test/integration/agent_catalog.sh
    python3 test/tools/deferred_recall.py DIR [TOOLGATE MOCK]

agent_catalog.sh measures R@1 only (the scripted model calls the first
result). This replays each kept task (DIR/q/N: tools.json, prompt, want)
against a toolgate of its own (discovery on, the agent's own tools in view
as agent_catalog.sh has them) and reads search_tools' whole result from
the mock's last request, twice: as Claude Code sends the catalog by
default (its own tools whole, the MCP tools and its deferred built-ins
only named in a system message, which the Messages bridge makes stubs of)
and as it sends it with ENABLE_TOOL_SEARCH=false (every definition in
tools, mcp__catalog__<tool>). Claude Code's own tools are taken from
DIR/last.json, the last upstream request of the kept run.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

META = ("search_tools", "get_tool_schema", "call_tool")
HEADER = ("The following deferred tools are now available via ToolSearch. Their schemas are "
          "NOT loaded. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool "
          "schemas before calling them:\n")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"nothing listens on {port}")


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        r.read()


def search_result(mock):
    """The names search_tools answered, from the mock's last request."""
    with urllib.request.urlopen(f"{mock}/_last") as r:
        last = json.loads(json.load(r)["body"])
    for m in last.get("messages", []):
        if m.get("role") == "tool":
            try:
                return [x["name"] for x in json.loads(m["content"]).get("results", [])]
            except (ValueError, TypeError, KeyError):
                return []
    return []


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)  # no kept run named: say how to make one
    keep = sys.argv[1]
    tg_bin = sys.argv[2] if len(sys.argv) > 2 else "build/toolgate"
    mock_bin = sys.argv[3] if len(sys.argv) > 3 else "build/mock-upstream"
    last = json.loads(json.load(open(f"{keep}/last.json"))["body"])
    own = [t["function"] for t in last["tools"] if t["function"]["name"] not in META]
    stubs = [f["name"] for f in own if (f.get("description") or "").startswith("Deferred by the agent")]
    own = [f for f in own if f["name"] not in stubs]
    mport, tport = free_port(), free_port()
    tmp = tempfile.mkdtemp()
    conf = f"{tmp}/tg.conf"
    with open(conf, "w") as f:
        f.write(f"[server]\nlisten = 127.0.0.1:{tport}\nlog_level = warn\n\n[route q]\nprefix = /q\n"
                f"upstream = http://127.0.0.1:{mport}/as/discovery-fill/v1\ndialect = openai\n"
                "discovery = on\ndiscovery_core = [!m]*, m[!c]*, mc[!p]*, mcp[!_]*\n")
    procs = [subprocess.Popen([mock_bin, "--listen", f"127.0.0.1:{mport}"], stderr=subprocess.DEVNULL)]
    wait_port(mport)
    procs.append(subprocess.Popen([tg_bin, "-c", conf], stderr=subprocess.DEVNULL))
    try:
        wait_port(tport)
        run(keep, own, stubs, f"http://127.0.0.1:{tport}/q", f"http://127.0.0.1:{mport}")
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def run(keep, own, stubs, tg, mock):
    dirs = sorted((d for d in os.listdir(f"{keep}/q") if d.isdigit()), key=int)
    hits = {"names": [0, 0], "definitions": [0, 0]}
    for d in dirs:
        q = f"{keep}/q/{d}"
        tools = json.load(open(f"{q}/tools.json"))
        prompt = open(f"{q}/prompt").read()
        want = "mcp__catalog__" + open(f"{q}/want").read()
        names = stubs + ["mcp__catalog__" + t["function"]["name"] for t in tools]
        post(f"{tg}/v1/messages", {
            "model": "gpt-4.1", "max_tokens": 100, "system": HEADER + "\n".join(names) + "\n\n",
            "tools": [{"name": f["name"], "description": f.get("description", ""),
                       "input_schema": f.get("parameters") or {"type": "object"}} for f in own],
            "messages": [{"role": "user", "content": prompt}]})
        by_name = search_result(mock)
        defs = [{"type": "function", "function": f} for f in own]
        defs += [{"type": "function", "function": dict(t["function"], name="mcp__catalog__" + t["function"]["name"])}
                 for t in tools]
        post(f"{tg}/v1/chat/completions", {"model": "gpt-4.1", "tools": defs,
                                            "messages": [{"role": "user", "content": prompt}]})
        by_def = search_result(mock)
        for k, res in (("names", by_name), ("definitions", by_def)):
            hits[k][0] += res[:1] == [want]
            hits[k][1] += want in res[:5]
        print(f"# {d} {want[14:]}: names {[n.replace('mcp__catalog__', '') for n in by_name[:3]]}, "
              f"definitions {[n.replace('mcp__catalog__', '') for n in by_def[:3]]}")
    for k, (r1, r5) in hits.items():
        print(f"{k}: R@1 {r1}/{len(dirs)}, R@5 {r5}/{len(dirs)}")


if __name__ == "__main__":
    main()
