"""A stdio MCP server with one tool, `dump`, whose output is ROWS lines of text (over 8,000
characters): what an MCP tool that dumps a table returns. Standard library only; newline-
delimited JSON-RPC 2.0, as Claude Code's stdio transport speaks it."""

from __future__ import annotations

import json
import sys

ROWS = 600


def rows() -> str:
    return "".join(f"row {n:05d}: value\n" for n in range(ROWS))


def answer(request: dict) -> dict | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification (notifications/initialized)
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-06-18")
        result = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "e2e", "version": "1.0.0"},
        }
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"table": {"type": "string"}}}
        tool = {"name": "dump", "description": "Dump a table.", "inputSchema": schema}
        result = {"tools": [tool]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": rows()}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
