"""A stdio MCP server in Python's standard library alone: JSON-RPC 2.0, one
message a line. It stands for an operator's server that holds a secret in
its environment (NOTES_TOKEN) and works on the thread's files by absolute
path (THREADSMITH_WORKTREE). Run it as `python3 -m notes_mcp`."""

import json
import os
import sys

TOOLS = [
    {
        "name": "lookup",
        "description": "Looks a note up (needs the token).",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    },
    {
        "name": "read",
        "description": "Reads a file of the thread's worktree.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
]


def call(name, args):
    if name == "lookup":
        ok = len(os.environ.get("NOTES_TOKEN", "")) > 16
        return "note %s: ship it (%s)" % (args.get("id", "?"), "token ok" if ok else "no token")
    if name == "read":
        root = os.environ["THREADSMITH_WORKTREE"]
        with open(os.path.join(root, args["path"])) as f:
            return f.read()
    raise KeyError(name)


def answer(req):
    method, params = req.get("method"), req.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "notes", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        try:
            text = call(params.get("name"), params.get("arguments") or {})
            return {"content": [{"type": "text", "text": text}]}
        except Exception as e:  # the tool's error, told to the model
            return {"content": [{"type": "text", "text": "error: %r" % (e,)}], "isError": True}
    raise LookupError(method)


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if "id" not in req:
            continue  # a notification: nothing to answer
        try:
            reply = {"jsonrpc": "2.0", "id": req["id"], "result": answer(req)}
        except LookupError:
            reply = {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "method not found"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
