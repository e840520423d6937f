#!/usr/bin/env python3
"""schema_bomb.py -- a request whose tool schemas amplify when $ref is inlined.

Each tool has a chain of $defs L0..L(depth-1); every level is an anyOf that
reaches the next level three times (directly and through two properties),
so inlining the references for a dialect that cannot take $ref (gemini,
vertex, xai, strict targets) multiplies the schema by 3 per level. The
request is small (about 3 KB a tool); its rewrite is not.

usage: schema_bomb.py [TOOLS] [DEPTH] > request.json
(docs/dialects.md rule 62; issue 16 item 4: 100 such tools, 294 KB, once
became a 78 MB upstream body.)
"""
import json
import sys

tools = int(sys.argv[1]) if len(sys.argv) > 1 else 100
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 9
text = ("A node of the document tree; it may hold further nodes of the same "
        "kind, a reference to one, or a small record that names two of them. ")


def tool(t):
    defs = {}
    for i in range(depth):
        nxt = {"$ref": "#/$defs/L%d" % (i + 1)} if i + 1 < depth else {"type": "string"}
        defs["L%d" % i] = {
            "description": text + "Level %d." % i,
            "anyOf": [nxt, {"type": "object", "properties": {"left": nxt, "right": nxt},
                            "required": ["left"]}],
        }
    return {"type": "function", "function": {
        "name": "tree_tool_%03d" % t,
        "description": "Edit a document tree (%d)." % t,
        "parameters": {"type": "object", "$defs": defs,
                       "properties": {"root": {"$ref": "#/$defs/L0"}},
                       "required": ["root"]}}}


json.dump({"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "go"}],
           "tools": [tool(t) for t in range(tools)]}, sys.stdout)
