#!/usr/bin/env node
// A stdio MCP server in Node's standard library alone: JSON-RPC 2.0, one
// message a line. It stands for an operator's server installed globally and
// started with `npx notes-mcp`, holding a secret in its environment
// (NOTES_TOKEN) and working on the thread's files by absolute path
// (THREADSMITH_WORKTREE). Like many packages, it uses a native helper when
// one is installed (bufferutil) and does without otherwise.
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");

try {
  require("bufferutil");
} catch (e) {
  // optional
}

const tools = [
  { name: "lookup", description: "Looks a note up (needs the token).", inputSchema: { type: "object", properties: { id: { type: "string" } } } },
  { name: "read", description: "Reads a file of the thread's worktree.", inputSchema: { type: "object", properties: { path: { type: "string" } } } },
];

function call(name, args) {
  if (name === "lookup") {
    const ok = (process.env.NOTES_TOKEN || "").length > 16;
    return `note ${args.id}: ship it (${ok ? "token ok" : "no token"})`;
  }
  if (name === "read") {
    return fs.readFileSync(path.join(process.env.THREADSMITH_WORKTREE, args.path), "utf8");
  }
  throw new Error("no tool " + name);
}

function answer(req) {
  const params = req.params || {};
  switch (req.method) {
    case "initialize":
      return { protocolVersion: params.protocolVersion || "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "notes", version: "1" } };
    case "ping":
      return {};
    case "tools/list":
      return { tools };
    case "tools/call":
      try {
        return { content: [{ type: "text", text: call(params.name, params.arguments || {}) }] };
      } catch (e) {
        return { content: [{ type: "text", text: "error: " + e.message }], isError: true };
      }
  }
  return null;
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  const req = JSON.parse(line);
  if (req.id === undefined) return; // a notification
  const result = answer(req);
  const reply = result === null ? { jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "method not found" } } : { jsonrpc: "2.0", id: req.id, result };
  process.stdout.write(JSON.stringify(reply) + "\n");
});
