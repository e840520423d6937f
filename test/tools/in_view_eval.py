"""in_view_eval.py -- what search_tools gives a model when the agent's own
tools are in view beside the catalog (issue 31): the catalog tasks of an
agent_catalog.sh run, and tasks whose answer is one of the agent's own
tools ("run a shell command": Bash).

    TG_CATALOG_AGENT=claude_all TG_AGENT_QUERIES=30 TG_AGENT_KEEP=DIR \\
        sh test/integration/agent_catalog.sh
    python3 test/tools/in_view_eval.py DIR/last.json DIR/q [TOOLGATE MOCK]

The agent's own tools are the ones toolgate sent upstream in LAST (a kept
run's last upstream request, the mock's /_last) but the meta-tools; those
Claude Code defers are stubs there ("Deferred by the agent ..."), and then
the catalog goes as names in a system turn over the Messages bridge, as
Claude Code sends it, else as definitions over chat completions (opencode,
claude_all). Each task is replayed against a toolgate of its own
(discovery on, the own tools in view as agent_catalog.sh has them) and
search_tools' answer read from the mock: the first result is what the
scripted model calls; in_view is what toolgate lists apart. To compare
leads (IN_VIEW_LEAD, discovery/answer.c), build toolgate with another, e.g.
make BUILD=build-lead OPT="-O2 -DIN_VIEW_LEAD=2" build-lead/toolgate, and
pass it as TOOLGATE.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deferred_recall import HEADER, META, free_port, post, wait_port  # noqa: E402

# tasks whose answer is an agent's own tool; only those the agent has count
OWN_TASKS = [
    ("run a shell command", ["Bash", "bash"]),
    ("run the test suite with npm test", ["Bash", "bash"]),
    ("read the contents of a file", ["Read", "read"]),
    ("change one line in a source file", ["Edit", "edit"]),
    ("write a new file to disk", ["Write", "write"]),
    ("fetch the content of a web page", ["WebFetch", "webfetch"]),
    ("search the web for recent news", ["WebSearch", "websearch"]),
    ("schedule a recurring job every morning", ["CronCreate"]),
    ("edit a cell in a jupyter notebook", ["NotebookEdit"]),
    ("find files whose names match a pattern", ["glob", "Glob"]),
    ("search file contents for a regular expression", ["grep", "Grep"]),
    ("keep a todo list of the steps of this task", ["todowrite", "TodoWrite"]),
    ("hand a complex task to a subagent", ["Agent", "task", "Task"]),
    ("stop a running background task", ["TaskStop"]),
]


def answer(mock):
    """search_tools' answer (a dict), from the mock's last request."""
    with urllib.request.urlopen(f"{mock}/_last") as r:
        last = json.loads(json.load(r)["body"])
    for m in last.get("messages", []):
        if m.get("role") == "tool":
            try:
                return json.loads(m["content"])
            except (ValueError, TypeError):
                return {}
    return {}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)  # no kept run named: say how to make one
    own_all = [t["function"] for t in json.loads(json.load(open(sys.argv[1]))["body"])["tools"]
               if t["function"]["name"] not in META]
    qdir = sys.argv[2]
    tg_bin = sys.argv[3] if len(sys.argv) > 3 else "build/toolgate"
    mock_bin = sys.argv[4] if len(sys.argv) > 4 else "build/mock-upstream"
    stubs = [f["name"] for f in own_all if (f.get("description") or "").startswith("Deferred by the agent")]
    own = [f for f in own_all if f["name"] not in stubs]
    claude = any(f["name"] == "Bash" for f in own)
    prefix = "mcp__catalog__" if claude else "mcp_"
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
        ask = asker(own, stubs, prefix, f"http://127.0.0.1:{tport}/q", f"http://127.0.0.1:{mport}")
        run(qdir, prefix, ask, {f["name"] for f in own_all})
    finally:
        for p in procs:
            p.terminate()
            p.wait()


def asker(own, stubs, prefix, tg, mock):
    def ask(tools, prompt):
        if stubs:  # Claude Code's default: deferred, names in a system turn
            names = stubs + [prefix + t["function"]["name"] for t in tools]
            post(f"{tg}/v1/messages", {
                "model": "gpt-4.1", "max_tokens": 100, "system": HEADER + "\n".join(names) + "\n\n",
                "tools": [{"name": f["name"], "description": f.get("description", ""),
                           "input_schema": f.get("parameters") or {"type": "object"}} for f in own],
                "messages": [{"role": "user", "content": prompt}]})
        else:
            defs = [{"type": "function", "function": f} for f in own]
            defs += [{"type": "function", "function": dict(t["function"], name=prefix + t["function"]["name"])}
                     for t in tools]
            post(f"{tg}/v1/chat/completions", {"model": "gpt-4.1", "tools": defs,
                                                "messages": [{"role": "user", "content": prompt}]})
        return answer(mock)
    return ask


def run(qdir, prefix, ask, own_names):
    dirs = sorted((d for d in os.listdir(qdir) if d.isdigit()), key=int)
    first = five = own_first = 0
    for d in dirs:
        q = f"{qdir}/{d}"
        tools = json.load(open(f"{q}/tools.json"))
        want = prefix + open(f"{q}/want").read()
        a = ask(tools, open(f"{q}/prompt").read())
        res = [x["name"] for x in a.get("results", [])]
        first += res[:1] == [want]
        five += want in res[:5]
        own_first += bool(res) and res[0] in own_names
        print(f"# {d} {want}: {res[:3]} in_view {a.get('in_view', [])}")
    n = len(dirs)
    print(f"catalog tasks: the target first {first}/{n}, among five {five}/{n}; "
          f"an own tool first {own_first}/{n}")
    tools = json.load(open(f"{qdir}/0/tools.json"))
    k = first_own = seen = 0
    for text, names in OWN_TASKS:
        name = next((x for x in names if x in own_names), None)
        if not name:
            continue
        k += 1
        a = ask(tools, text)
        res = [x["name"] for x in a.get("results", [])]
        first_own += res[:1] == [name]
        seen += name in res[:5] or name in a.get("in_view", [])
        print(f"# own {name} ({text}): {res[:3]} in_view {a.get('in_view', [])}")
    print(f"own-tool tasks: the tool first {first_own}/{k}, first five or in_view {seen}/{k}")


if __name__ == "__main__":
    main()
