#!/usr/bin/env node
// mcp_catalog.mjs -- a local stdio MCP server that serves a large tool
// catalog, for test/integration/agent_catalog.sh: a real agent takes it
// like any MCP server, toolgate collapses its tools behind discovery.
//
//   node mcp_catalog.mjs TOOLS.json CALLS.log [--read]
//
// TOOLS.json is an OpenAI tools array ({type, function: {name,
// description, parameters}}); tools/list serves it as MCP tools (one page),
// tools/call appends {"name", "arguments"} as a JSON line to CALLS.log and
// answers a short text; with --read, a call with a "path" argument
// answers that file's text (test/integration/agents.sh: the token that
// proves an MCP tool ran). Newline-delimited JSON-RPC 2.0 over stdin/stdout,
// as the MCP stdio transport has it; no dependency beyond node.
import { appendFileSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const [toolsPath, callsPath, mode] = process.argv.slice(2);
const tools = JSON.parse(readFileSync(toolsPath, "utf8")).map((t) => ({
  name: t.function.name,
  description: t.function.description || "",
  // MCP wants an object schema: a few corpus tools (gitlab's) have none
  inputSchema: { type: "object", properties: {}, ...(t.function.parameters || {}) },
}));

function send(msg) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
}

function answer(req) {
  switch (req.method) {
    case "initialize":
      return {
        protocolVersion: req.params?.protocolVersion || "2025-06-18",
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: "catalog", version: "1.0.0" },
      };
    case "ping":
      return {};
    case "tools/list":
      return { tools };
    case "tools/call": {
      const { name, arguments: args } = req.params || {};
      appendFileSync(callsPath, JSON.stringify({ name, arguments: args ?? {} }) + "\n");
      const text =
        mode === "--read" && typeof args?.path === "string"
          ? readFileSync(args.path, "utf8")
          : `catalog: ${name} ran`;
      return { content: [{ type: "text", text }] };
    }
    case "resources/list":
      return { resources: [] };
    case "prompts/list":
      return { prompts: [] };
    default:
      return undefined;
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return;
  }
  if (req.id === undefined || req.id === null) return; // a notification
  const result = answer(req);
  if (result === undefined)
    send({ id: req.id, error: { code: -32601, message: `method not found: ${req.method}` } });
  else send({ id: req.id, result });
});
