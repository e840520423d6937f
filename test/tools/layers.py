#!/usr/bin/env python3
"""layers.py -- the include graph of toolgate's sources, and its rule.

The rule (docs/architecture.md): a file includes
only files of its own layer or of a layer below it, and no chain of includes
comes back to where it started. The layers, from the bottom:

    core/  <  sanitize/ (request stages), bridge/  <  repair/  <  discovery/
           <  pipeline/  <  conf/  <  proxy/

and inside proxy/: its helpers < worker.h < request, retry < bridges
< prepare < gemini < upsock, upconn < upstream < front < server < main
(h1, the upstream client's parser, is one of the helpers).

Usage: layers.py [ROOT]          TAP: the rule holds (two checks), and no hand-written .c is past 1,400 lines
       layers.py --measure ROOT  figures for any tree, old layout or new:
                                 files, include edges, loops, edges that run
                                 back up (against a topological order of the
                                 whole graph), largest file, and the loops
                                 that private headers of every folder hide

A private header (NAME_int.h) is seen through in the folders SEE_THROUGH
names: including it depends on each file that defines what it declares.
"""
import os
import re
import sys

DIRS = ("core", "sanitize", "bridge", "repair", "discovery", "pipeline", "conf", "proxy")
LAYER = {"core": 0, "sanitize": 1, "bridge": 1, "repair": 2, "discovery": 3,
         "pipeline": 4, "conf": 5, "proxy": 6,
         # inside proxy/, the order proxy/worker.h states: its helpers
         # (http, log, metrics, sse, store, embed_http: 6) at the bottom
         "proxy/worker": 6.1, "proxy/request": 6.2, "proxy/retry": 6.2,
         "proxy/bridges": 6.3, "proxy/fold": 6.3, "proxy/embed_wait": 6.35, "proxy/stored": 6.35,
         "proxy/prepare": 6.4, "proxy/gemini": 6.45,
         "proxy/upsock": 6.5,
         "proxy/upconn": 6.5,
         "proxy/upstream": 6.6, "proxy/front": 6.7, "proxy/server": 6.8,
         "proxy/main": 6.9}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A function declared or defined at the start of a line (not static): what
# a header declares, what a .c defines.
FUNC = re.compile(r'^(?!static\b|typedef\b|extern\b|return\b|else\b)'
                  r'(?:[A-Za-z_]\w*[\s*]+)+\**(\w+)\s*\(', re.M)
# The folders whose private headers (NAME_int.h) are seen through: an
# include of one is an edge to every unit that defines a function it
# declares, so a header shared by several files cannot hide a loop among
# them (repair_int.h did, before issue 30). bridge/ joined when its last
# hidden loop went (responses_api_int.h declared functions of four of its
# files, each including it; 2026-12-07); sanitize/ is left out for the
# schema walker's mutual recursion, which is by design (layers.py
# --measure lists what seeing through every folder would find).
SEE_THROUGH = ("repair", "bridge")


def sources(root):
    out = []
    for d in DIRS:
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith((".c", ".h")):
                out.append(d + "/" + f)
    return out


def unit(f):
    """A .c and its .h are one unit: hygiene.c including pipeline.h, whose
    pipeline.c's header includes hygiene.h, is a loop between two units.
    A module's private header (repair_int.h) belongs to the module."""
    u = os.path.splitext(f)[0]
    return u[:-4] if u.endswith("_int") else u


def read(root, f):
    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
        return fh.read()


def definers(root, files):
    """Function name -> the units whose .c defines it."""
    out = {}
    for f in files:
        if f.endswith(".c"):
            for name in FUNC.findall(read(root, f)):
                out.setdefault(name, set()).add(unit(f))
    return out


def graph(root, see_through=SEE_THROUGH):
    files = sources(root)
    known = set(files)
    defs = definers(root, files)
    g = {unit(f): set() for f in files}
    for f in files:
        text = read(root, f)
        for inc in INCLUDE.findall(text):
            # top-relative ("core/buf.h") or relative to the file ("../x/y.h", "y.h")
            cands = [inc, os.path.normpath(os.path.join(os.path.dirname(f), inc))]
            hit = next((c for c in cands if c in known), None)
            if hit and unit(hit) != unit(f):
                g[unit(f)].add(unit(hit))
            if hit and hit.endswith("_int.h") and hit.split("/")[0] in see_through:
                for name in FUNC.findall(read(root, hit)):
                    g[unit(f)].update(defs.get(name, set()) - {unit(f)})
    return {u: sorted(v) for u, v in g.items()}


def layer(u):
    return LAYER.get(u, LAYER[u.split("/")[0]])


def loops(g):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index:
            visit(v)
    return out


def levels(g):
    """Each file's level: 0 for a file that includes none, else one above
    the highest it includes (files of one loop share a level)."""
    comp_of = {}
    for i, comp in enumerate(loops(g)):
        for f in comp:
            comp_of[f] = i
    memo = {}

    def lv(f, seen):
        if f in memo:
            return memo[f]
        seen = seen | {f}
        best = 0
        for w in g[f]:
            if w in seen or (f in comp_of and comp_of.get(w) == comp_of[f]):
                continue
            best = max(best, lv(w, seen) + 1)
        memo[f] = best
        return best

    return {f: lv(f, frozenset()) for f in g}


def back_edges(g):
    """Edges inside a loop that run from a lower level to a higher one:
    the includes one would have to remove to make the graph a ladder."""
    lv = levels(g)
    comp = {f: i for i, c in enumerate(loops(g)) for f in c}
    return [(a, b) for a in g for b in g[a]
            if a in comp and comp.get(b) == comp[a] and lv[b] >= lv[a]]


def measure(root):
    g = graph(root)
    lines = {}
    for f in sources(root):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            lines[f] = sum(1 for _ in fh)
    big = max(lines, key=lines.get)
    lp = loops(g)
    lv = levels(g)
    print("files %d, units (a .c with its .h) %d, include edges %d, levels %d" % (len(lines), len(g), sum(len(v) for v in g.values()),
                                                    max(lv.values()) + 1))
    print("include loops %d%s" % (len(lp), "".join("\n  " + " ".join(c) for c in lp)))
    be = back_edges(g)
    print("edges running back up %d%s" % (len(be), "".join("\n  %s -> %s" % e for e in be)))
    print("largest file %s (%d lines), code %d lines" % (big, lines[big], sum(lines.values())))
    hidden = [c for c in loops(graph(root, DIRS)) if c not in lp]
    print("loops behind private headers (NAME_int.h seen through in every folder) %d%s"
          % (len(hidden), "".join("\n  " + " ".join(c) for c in hidden)))


MAX_LINES = 1400  # a hand-written .c past this does more than one job (issue 30)


def too_long(root):
    """Hand-written .c files (generated ones say so in their first lines)
    of the source folders and test/ past MAX_LINES: [(path, lines)]."""
    out = []
    for top in DIRS + ("test", "bench"):
        for d, _, fs in os.walk(os.path.join(root, top)):
            if "node_modules" in d:
                continue
            for f in fs:
                if not f.endswith(".c"):
                    continue
                p = os.path.join(d, f)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                if "generated by" in "\n".join(text.split("\n")[:3]):
                    continue
                n = text.count("\n")
                if n > MAX_LINES:
                    out.append((os.path.relpath(p, root), n))
    return sorted(out)


def check(root):
    g = graph(root)
    up = [(a, b) for a in g for b in g[a] if layer(b) > layer(a)]
    lp = loops(g)
    big = too_long(root)
    print("1..3")
    print(("ok" if not up else "not ok") + " 1 - every include goes to the same layer or below")
    for a, b in up:
        print("#   %s (layer %g) includes %s (layer %g)" % (a, layer(a), b, layer(b)))
    print(("ok" if not lp else "not ok") + " 2 - no include loop")
    for c in lp:
        print("#   loop: " + " ".join(c))
    print(("ok" if not big else "not ok") + " 3 - every hand-written .c under %d lines" % MAX_LINES)
    for p, n in big:
        print("#   %s: %d lines" % (p, n))
    return 0 if not up and not lp and not big else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":
        measure(sys.argv[2] if len(sys.argv) > 2 else ".")
        sys.exit(0)
    sys.exit(check(sys.argv[1] if len(sys.argv) > 1 else "."))
