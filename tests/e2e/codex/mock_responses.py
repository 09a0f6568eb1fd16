"""A mock of the OpenAI Responses API, enough to drive the real Codex CLI headless.

Standard library only. Binds 127.0.0.1, answers ``GET /v1/models`` (an empty list) and
``POST /v1/responses`` (Server-Sent Events: ``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.output_item.done``, ``response.completed``), and
appends every request to the ``--log`` file as one JSON line ``{"n", "path", "reply", "body"}``,
where ``reply`` names the rule that answered.

The reply is chosen from the request itself, first rule that matches wins:

``compaction``
    The last user message is Codex's compaction prompt (it contains ``CONTEXT CHECKPOINT
    COMPACTION``). The reply is ``MOCK-SUMMARY`` followed by the text of ``--summary-file``,
    read at request time.
``subagent``
    A user message contains ``E2E_SUBAGENT_TASK``, which every message this mock dispatches
    starts with: a sub-agent's own request. Reply ``DONE``.
``after_tool_result``
    The last input item is a ``function_call_output``. Reply with a text that quotes it.
``dispatch``
    The last user message contains ``E2E_DISPATCH_BYTES=<n>`` or ``E2E_DISPATCH_PASTE=<n>`` and
    ``spawn_agent`` is offered. Reply with a ``spawn_agent`` call whose ``message`` is exactly n
    bytes (UTF-8): short paragraphs (nothing ctxward's C9 offload can move) for BYTES, one pasted
    block (which C9 moves to a file) for PASTE.
``send``
    The last user message contains ``E2E_SEND_BYTES=<n>``: first a small ``spawn_agent`` call,
    then, after its result, a ``send_input`` call to the agent it returned, whose ``message`` is
    n bytes of short paragraphs.
``shell``
    The last user message contains ``E2E_SHELL=<n>`` and a shell tool is offered: a failing
    ``ls`` of a missing file, until the request carries n tool results (drift).
``text``
    Anything else: a plain text reply ``MOCK-OK``.

``E2E_INPUT_TOKENS=<n>`` in the last user message makes the reply report n input tokens: with
a low ``model_auto_compact_token_limit`` Codex auto-compacts before its next request. Every
other reply reports small usage.

Run: ``python3 mock_responses.py --port 0 --port-file PORT --log requests.jsonl``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

COMPACTION_MARKER = "CONTEXT CHECKPOINT COMPACTION"
SUBAGENT_MARKER = "E2E_SUBAGENT_TASK"
DISPATCH = re.compile(r"E2E_DISPATCH_(BYTES|PASTE)=(\d+)")
SHELL = re.compile(r"E2E_SHELL=(\d+)")
SEND = re.compile(r"E2E_SEND_BYTES=(\d+)")
INPUT_TOKENS = re.compile(r"E2E_INPUT_TOKENS=(\d+)")
PARAGRAPH = "Check one more module and report what it exports.\n\n"
SHELL_TOOLS = ("exec_command", "shell", "shell_command", "local_shell")
DEFAULT_INPUT_TOKENS = 1000


class Reply(NamedTuple):
    rule: str
    text: str  # assistant text ("" for a tool call)
    call: dict[str, Any] | None  # {"name", "arguments"} of a function call, or None
    input_tokens: int


def item_text(item: dict[str, Any]) -> str:
    """The text of one input item (a message's text parts joined; a tool output's text)."""
    if item.get("type") == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else json.dumps(output)
    content = item.get("content") or ""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))


def messages(body: dict[str, Any], role: str) -> list[str]:
    items = body.get("input") or []
    return [item_text(i) for i in items if i.get("type") == "message" and i.get("role") == role]


def tool_names(body: dict[str, Any]) -> dict[str, str]:
    """Every offered function's name -> its namespace ("" for a top-level function)."""
    found: dict[str, str] = {}
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                found[str(inner.get("name", ""))] = str(tool.get("name", ""))
        else:
            found[str(tool.get("name", ""))] = ""
    return found


def dispatch_message(shape: str, size: int) -> str:
    if shape == "PASTE":
        head = f"{SUBAGENT_MARKER}: reply DONE.\n"
        return head + "x" * max(0, size - len(head.encode()))
    head = f"{SUBAGENT_MARKER}: review the modules below.\n\n"
    body = (head + PARAGRAPH * (size // len(PARAGRAPH) + 1)).encode("utf-8")[:size]
    return body.decode("utf-8", "ignore")


def choose_reply(body: dict[str, Any], summary_file: Path) -> Reply:
    items = body.get("input") or []
    users = messages(body, "user")
    last_user = users[-1] if users else ""
    tokens = INPUT_TOKENS.search(last_user)
    input_tokens = int(tokens.group(1)) if tokens else DEFAULT_INPUT_TOKENS
    last = items[-1] if items else {}
    if COMPACTION_MARKER in last_user and last.get("type") == "message":
        summary = summary_file.read_text(encoding="utf-8") if summary_file.exists() else ""
        return Reply("compaction", f"MOCK-SUMMARY\n{summary}", None, DEFAULT_INPUT_TOKENS)
    if any(SUBAGENT_MARKER in text for text in users):
        return Reply("subagent", "DONE", None, DEFAULT_INPUT_TOKENS)
    shell = SHELL.search(last_user)
    results = sum(1 for i in items if i.get("type") == "function_call_output")
    offered = tool_names(body)
    if shell and results < int(shell.group(1)):
        name = next((n for n in SHELL_TOOLS if n in offered), None)
        if name is not None:
            argument = "cmd" if name == "exec_command" else "command"
            command: Any = "ls e2e-missing-file" if argument == "cmd" else ["ls", "e2e-missing"]
            arguments = json.dumps({argument: command})
            return Reply("shell", "", {"name": name, "arguments": arguments}, input_tokens)
    send = SEND.search(last_user)
    if send and "send_input" in offered and results < 2:
        if results == 0:
            arguments = json.dumps({"message": dispatch_message("BYTES", 2_000)})
            call = {
                "name": "spawn_agent",
                "namespace": offered["spawn_agent"],
                "arguments": arguments,
            }
            return Reply("send_spawn", "", call, 1000)
        try:
            target = json.loads(item_text(last)).get("agent_id", "")
        except (ValueError, AttributeError):
            target = ""
        message = dispatch_message("BYTES", int(send.group(1)))
        arguments = json.dumps({"target": target, "message": message})
        call = {"name": "send_input", "namespace": offered["send_input"], "arguments": arguments}
        return Reply("send_input", "", call, 1000)
    if last.get("type") == "function_call_output":
        return Reply("after_tool_result", f"MOCK-TOOL-RESULT: {item_text(last)[:2000]}", None, 1)
    dispatch = DISPATCH.search(last_user)
    if dispatch and "spawn_agent" in offered and results == 0:
        message = dispatch_message(dispatch.group(1), int(dispatch.group(2)))
        arguments = json.dumps({"message": message})
        call = {"name": "spawn_agent", "namespace": offered["spawn_agent"], "arguments": arguments}
        return Reply("dispatch", "", call, 1000)
    return Reply("text", "MOCK-OK", None, input_tokens)


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def stream(reply: Reply, n: int) -> list[bytes]:
    rid = f"resp_mock_{n}"
    events = [{"type": "response.created", "response": {"id": rid}}]
    if reply.call is not None:
        item = {
            "type": "function_call",
            "id": f"fc_mock_{n}",
            "call_id": f"call_mock_{n}",
            "name": reply.call["name"],
            **({"namespace": reply.call["namespace"]} if reply.call.get("namespace") else {}),
            "arguments": reply.call["arguments"],
            "status": "completed",
        }
        events.append({"type": "response.output_item.added", "output_index": 0, "item": item})
    else:
        item = {
            "type": "message",
            "id": f"msg_mock_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
        empty = {**item, "content": []}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": empty})
        delta = {"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0}
        events.append({**delta, "content_index": 0, "delta": reply.text})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    usage = {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + 10,
    }
    events.append({"type": "response.completed", "response": {"id": rid, "usage": usage}})
    return [sse(event) for event in events]


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, log: Path, summary_file: Path) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.log = log
        self.summary_file = summary_file
        self.counter = itertools.count(1)
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [], "models": []}).encode())
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size)
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = {"unparsed": raw[:2000].decode("utf-8", "replace")}
        path = self.path.split("?")[0]
        if not path.endswith("/responses") or not isinstance(body, dict):
            self._log(path, "unknown", body)
            self._send(404, b'{"error": "not found"}')
            return
        reply = choose_reply(body, self.server.summary_file)
        n = self._log(path, reply.rule, body)
        payload = b"".join(stream(reply, n))
        self._send(200, payload, "text/event-stream")

    def _log(self, path: str, rule: str, body: Any) -> int:
        with self.server.lock:
            n = next(self.server.counter)
            entry = {"n": n, "path": path, "reply": rule, "body": body}
            with self.server.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
        return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--summary-file", type=Path, required=True)
    args = parser.parse_args()
    server = Server(args.port, args.log, args.summary_file)
    args.port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
